"""What a host heartbeat says about its amphorae: who holds each VIP, and until when the
amphorae's certificate is valid.

The controller chooses the roles when it builds a pair, but keepalived decides who holds
the VIP afterwards: a takeover (a killed keepalived or HAProxy, a lost host) moves it
without the controller. The agent reads the state keepalived last entered and announces
it; here it becomes the amphora's ``role``, so ``openstack loadbalancer amphora list``
names the amphora that really serves, and a later failover replaces the real BACKUP
first. Only a MASTER report changes roles: it makes its amphora MASTER and the pair's other
amphora BACKUP (when the MASTER's host is lost, the survivor's report is the only one that
still arrives); BACKUP and FAULT reports change nothing, since both members report BACKUP
until their first election. Only rows that differ are written, so the steady state costs
one read per host heartbeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from lbaas.db.tables import AmphoraRow
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, AmphoraRole

_LIVE = [status.value for status in LIVE_AMPHORA_STATUSES]


def _naive_utc(at: float) -> datetime:
    return datetime.fromtimestamp(at, UTC).replace(tzinfo=None, microsecond=0)


def apply_host_report(
    session: Session,
    host_id: str,
    vrrp: Mapping[str, str],
    cert_expiration: float | None,
    now: datetime,
) -> frozenset[str]:
    """Record the roles and certificate expiry the host ``host_id`` announced; the ids
    of the live amphorae placed on the host."""
    rows = list(
        session.scalars(
            select(AmphoraRow).where(AmphoraRow.compute_id == host_id, AmphoraRow.status.in_(_LIVE))
        )
    )
    expiry = None if cert_expiration is None else _naive_utc(cert_expiration)
    for row in rows:
        if expiry is not None and row.cert_expiration != expiry:
            row.cert_expiration = expiry
        # Only a MASTER report moves roles: both keepalived start in BACKUP and report it
        # until one wins the election, and a MASTER that lost the VIP is demoted by its
        # peer's MASTER report (or stays shown as MASTER while nobody holds the VIP).
        if vrrp.get(row.id) != "MASTER" or row.role != AmphoraRole.BACKUP.value:
            continue
        row.role, row.updated_at = AmphoraRole.MASTER.value, now
        if row.loadbalancer_id is not None:
            _demote_peers(session, row, now)
    return frozenset(row.id for row in rows)


def _demote_peers(session: Session, master: AmphoraRow, now: datetime) -> None:
    peers = session.scalars(
        select(AmphoraRow).where(
            AmphoraRow.loadbalancer_id == master.loadbalancer_id,
            AmphoraRow.id != master.id,
            AmphoraRow.status.in_(_LIVE),
            AmphoraRow.role == AmphoraRole.MASTER.value,
        )
    )
    for peer in peers:
        peer.role, peer.updated_at = AmphoraRole.BACKUP.value, now
