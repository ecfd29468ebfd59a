"""Writing the outcome of a converge back to the rows: statuses, removals, deletion.

A converge ends in one of three ways, each one transaction here: the graph was applied
(pending objects become ACTIVE, objects marked for deletion disappear, operating statuses
are set), the load balancer itself was removed (its whole tree goes and its VIP port is
released), or it failed for good (the load balancer and whatever was pending go to ERROR;
objects waiting to be deleted stay marked so a later successful converge removes them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime

from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from lbaas.db.graph_loader import load_loadbalancer_row
from lbaas.db.tables import (
    HealthMonitorRow,
    L7PolicyRow,
    L7RuleRow,
    ListenerRow,
    ListenerStatsRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
    PortRow,
    TagRow,
)
from lbaas.model.enums import OperatingStatus, ProvisioningStatus

ACTIVE = ProvisioningStatus.ACTIVE.value
ERROR = ProvisioningStatus.ERROR.value
PENDING_DELETE = ProvisioningStatus.PENDING_DELETE.value
StatusRow = (
    LoadBalancerRow | ListenerRow | PoolRow | MemberRow | HealthMonitorRow | L7PolicyRow | L7RuleRow
)


def _tree(lb: LoadBalancerRow) -> Iterator[StatusRow]:
    """Every stored object under a load balancer, children before their parents."""
    for listener in lb.listeners:
        for policy in listener.l7policies:
            yield from policy.rules
            yield policy
        yield listener
    for pool in lb.pools:
        yield from pool.members
        if pool.health_monitor is not None:
            yield pool.health_monitor
        yield pool


def _remove(session: Session, row: StatusRow) -> None:
    if isinstance(row, PoolRow):
        session.execute(
            update(ListenerRow)
            .where(ListenerRow.default_pool_id == row.id)
            .values(default_pool_id=None)
        )
    if isinstance(row, ListenerRow):
        session.execute(delete(ListenerStatsRow).where(ListenerStatsRow.listener_id == row.id))
    session.execute(delete(TagRow).where(TagRow.resource_id == row.id))
    session.delete(row)
    session.flush()


def _doomed(row: StatusRow, parents_doomed: bool) -> bool:
    return parents_doomed or row.provisioning_status == PENDING_DELETE


def finish_applied(
    session: Session,
    loadbalancer_id: str,
    now: datetime,
    operating: Mapping[str, OperatingStatus] | None = None,
) -> None:
    """The graph is live: settle statuses and drop what was being deleted."""
    lb = load_loadbalancer_row(session, loadbalancer_id)
    if lb is None:
        return
    doomed_ids: set[str] = set()
    for listener in lb.listeners:
        gone = _doomed(listener, False)
        for policy in listener.l7policies:
            policy_gone = _doomed(policy, gone)
            for rule in policy.rules:
                if _doomed(rule, policy_gone):
                    doomed_ids.add(rule.id)
            if policy_gone:
                doomed_ids.add(policy.id)
        if gone:
            doomed_ids.add(listener.id)
    for pool in lb.pools:
        gone = _doomed(pool, False)
        for member in pool.members:
            if _doomed(member, gone):
                doomed_ids.add(member.id)
        hm = pool.health_monitor
        if hm is not None and _doomed(hm, gone):
            doomed_ids.add(hm.id)
        if gone:
            doomed_ids.add(pool.id)
    for row in list(_tree(lb)):
        if row.id in doomed_ids:
            _remove(session, row)
        else:
            _settle(row, ACTIVE, now, operating)
    _settle(lb, ACTIVE, now, operating)


def _settle(
    row: StatusRow,
    provisioning: str,
    now: datetime,
    operating: Mapping[str, OperatingStatus] | None,
) -> None:
    changed = False
    if row.provisioning_status != provisioning:
        row.provisioning_status = provisioning
        changed = True
    if operating is not None and row.id in operating:
        value = operating[row.id].value
        if row.operating_status != value:
            row.operating_status = value
            changed = True
    if changed:
        row.updated_at = now


def finish_deleted(session: Session, loadbalancer_id: str, now: datetime) -> None:
    """The data plane is gone: remove the tree, release the VIP, keep a DELETED stub."""
    lb = load_loadbalancer_row(session, loadbalancer_id)
    if lb is None:
        return
    for row in list(_tree(lb)):
        _remove(session, row)
    session.execute(delete(ListenerStatsRow).where(ListenerStatsRow.loadbalancer_id == lb.id))
    session.execute(delete(TagRow).where(TagRow.resource_id == lb.id))
    if lb.vip_port_id:
        session.execute(delete(PortRow).where(PortRow.id == lb.vip_port_id))
    session.execute(delete(PortRow).where(PortRow.device_id == lb.id))
    lb.provisioning_status = ProvisioningStatus.DELETED.value
    lb.operating_status = OperatingStatus.OFFLINE.value
    lb.updated_at = now


def finish_failed(session: Session, loadbalancer_id: str, now: datetime) -> None:
    """Give up: the load balancer and everything pending (but deletions) go to ERROR."""
    lb = load_loadbalancer_row(session, loadbalancer_id)
    if lb is None:
        return
    for row in _tree(lb):
        if row.provisioning_status in (
            ProvisioningStatus.PENDING_CREATE.value,
            ProvisioningStatus.PENDING_UPDATE.value,
        ):
            _settle(row, ERROR, now, None)
    _settle(lb, ERROR, now, None)


def apply_operating_statuses(
    session: Session, loadbalancer_id: str, operating: Mapping[str, OperatingStatus], now: datetime
) -> None:
    """Record observed health without touching provisioning statuses."""
    lb = load_loadbalancer_row(session, loadbalancer_id)
    if lb is None:
        return
    for row in [*_tree(lb), lb]:
        _settle(row, row.provisioning_status, now, operating)
