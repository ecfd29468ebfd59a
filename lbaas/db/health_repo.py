"""Storage the health manager needs: amphora liveness, listener counters, failovers."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from lbaas.db import job_queue
from lbaas.db.tables import AmphoraRow, ListenerStatsRow, LoadBalancerRow

LIVE_AMPHORA = ("ALLOCATED", "READY", "BOOTING", "PENDING_CREATE")


def record_heartbeat(session: Session, amphora_id: str, loadbalancer_id: str, at: float) -> bool:
    amp = session.get(AmphoraRow, amphora_id, with_for_update=True)
    if amp is None or amp.status == "DELETED" or amp.loadbalancer_id != loadbalancer_id:
        return False
    if amp.last_heartbeat_at is None or at > amp.last_heartbeat_at:
        amp.last_heartbeat_at = at
    return True


def lock_counters(session: Session, amphora_id: str) -> list[ListenerStatsRow]:
    return list(
        session.scalars(
            select(ListenerStatsRow)
            .where(ListenerStatsRow.amphora_id == amphora_id)
            .with_for_update()
        )
    )


def put_counters(
    session: Session,
    amphora_id: str,
    loadbalancer_id: str,
    listener_id: str,
    epoch: int,
    base: dict[str, int],
    last: dict[str, int],
) -> None:
    row = session.get(ListenerStatsRow, (amphora_id, listener_id))
    if row is None:
        session.add(
            ListenerStatsRow(
                amphora_id=amphora_id,
                listener_id=listener_id,
                loadbalancer_id=loadbalancer_id,
                epoch=epoch,
                base=base,
                last=last,
            )
        )
        return
    row.epoch, row.base, row.last = epoch, base, last


def loadbalancer_is_settled(session: Session, loadbalancer_id: str) -> bool:
    """True when the load balancer exists and is not PENDING_* (lock held)."""
    lb = session.get(LoadBalancerRow, loadbalancer_id, with_for_update=True)
    return lb is not None and lb.provisioning_status in ("ACTIVE", "ERROR")


def heartbeating_amphorae(session: Session) -> list[tuple[str, str, float]]:
    rows = session.execute(
        select(AmphoraRow.id, AmphoraRow.loadbalancer_id, AmphoraRow.last_heartbeat_at).where(
            AmphoraRow.status.in_(LIVE_AMPHORA),
            AmphoraRow.loadbalancer_id.is_not(None),
            AmphoraRow.last_heartbeat_at.is_not(None),
        )
    )
    return [(a, str(lb), float(t or 0.0)) for a, lb, t in rows]


def request_failover(session: Session, amphora_id: str, now: Any) -> bool:
    """Mark the amphora failing over and enqueue a rebuild of its load balancer."""
    amp = session.get(AmphoraRow, amphora_id, with_for_update=True)
    if amp is None or amp.failover_pending or amp.loadbalancer_id is None:
        return False
    if amp.status not in LIVE_AMPHORA:
        return False
    amp.failover_pending = True
    lb = session.get(LoadBalancerRow, amp.loadbalancer_id, with_for_update=True)
    if lb is None:
        return False
    if lb.provisioning_status == "ACTIVE":
        lb.provisioning_status = "PENDING_UPDATE"
        lb.updated_at = now
    job_queue.enqueue_converge(session, lb.id, time.time(), rebuild=True)
    return True
