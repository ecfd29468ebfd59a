"""Writing the outcome of a converge back to the rows: statuses, removals, deletion.

A converge ends in one of three ways, each one transaction here: the graph was applied
(pending objects become ACTIVE, objects marked for deletion disappear, operating statuses
are set), the load balancer itself was removed (its whole tree goes and its VIP port is
released), or it failed for good (the load balancer and whatever was pending go to ERROR;
objects waiting to be deleted stay marked so a later successful converge removes them).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, delete, update
from sqlalchemy.orm import Session

from lbaas.db import tree_loader
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
    table_of,
)
from lbaas.db.tree_loader import TreeNode
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


@dataclass(frozen=True)
class SettleRow:
    """One stored object as the converge saw it, and whether it is being deleted."""

    table: Table
    id: str
    provisioning_status: str
    operating_status: str
    doomed: bool


@dataclass(frozen=True)
class TreeSnapshot:
    """The statuses of a load balancer's tree, read together with the graph applied.

    A converge whose fence is still CURRENT when it finishes knows that nothing in the
    tree changed meanwhile (every change bumps the job's generation, and the API refuses
    changes while the load balancer is PENDING_*), so it can settle from this snapshot
    with a few set-based statements instead of loading the tree a second time.
    """

    loadbalancer_id: str
    rows: tuple[SettleRow, ...]  # children before their parents, the load balancer last


def _settle_row(row: TreeNode, doomed: bool) -> SettleRow:
    return SettleRow(row.table, row.id, row.provisioning_status, row.operating_status, doomed)


def snapshot_tree(lb: TreeNode) -> TreeSnapshot:
    """What ``finish_applied`` needs of a tree loaded by ``tree_loader.load_tree``."""
    rows: list[SettleRow] = []
    for listener in lb.listeners:
        gone = _doomed(listener, False)
        for policy in listener.l7policies:
            policy_gone = _doomed(policy, gone)
            rows.extend(_settle_row(rule, _doomed(rule, policy_gone)) for rule in policy.rules)
            rows.append(_settle_row(policy, policy_gone))
        rows.append(_settle_row(listener, gone))
    for pool in lb.pools:
        gone = _doomed(pool, False)
        rows.extend(_settle_row(member, _doomed(member, gone)) for member in pool.members)
        hm = pool.health_monitor
        if hm is not None:
            rows.append(_settle_row(hm, _doomed(hm, gone)))
        rows.append(_settle_row(pool, gone))
    rows.append(_settle_row(lb, False))
    return TreeSnapshot(lb.id, tuple(rows))


_LISTENERS = tree_loader.LISTENERS
_POOLS = tree_loader.POOLS
_STATS = table_of(ListenerStatsRow)
_TAGS = table_of(TagRow)


def finish_applied(
    session: Session,
    snapshot: TreeSnapshot,
    now: datetime,
    operating: Mapping[str, OperatingStatus] | None = None,
) -> None:
    """The graph is live: drop what was being deleted, settle the rest as ACTIVE.

    Statuses are written per (table, new values) group, so an unchanged tree of any size
    costs one statement per kind of object that actually changes.
    """
    conn = session.connection()
    groups: dict[tuple[Table, str | None, str | None], list[str]] = defaultdict(list)
    for row in snapshot.rows:
        if row.doomed:
            if row.table is _POOLS:
                conn.execute(
                    update(_LISTENERS)
                    .where(_LISTENERS.c.default_pool_id == row.id)
                    .values(default_pool_id=None)
                )
            if row.table is _LISTENERS:
                conn.execute(delete(_STATS).where(_STATS.c.listener_id == row.id))
            conn.execute(delete(_TAGS).where(_TAGS.c.resource_id == row.id))
            conn.execute(delete(row.table).where(row.table.c.id == row.id))
            continue
        provisioning = ACTIVE if row.provisioning_status != ACTIVE else None
        observed = operating.get(row.id) if operating is not None else None
        new_operating = (
            observed.value
            if observed is not None and observed.value != row.operating_status
            else None
        )
        if provisioning is not None or new_operating is not None:
            groups[(row.table, provisioning, new_operating)].append(row.id)
    for (table, provisioning, new_operating), ids in groups.items():
        stmt = _status_update(table, provisioning is not None, new_operating is not None)
        conn.execute(stmt, {"ids": ids, "now": now, "prov": provisioning, "oper": new_operating})


@functools.cache
def _status_update(table: Table, provisioning: bool, operating: bool) -> Any:
    """Built once per shape: constructing DML per call cost more than running it."""
    values: dict[str, Any] = {"updated_at": bindparam("now")}
    if provisioning:
        values["provisioning_status"] = bindparam("prov")
    if operating:
        values["operating_status"] = bindparam("oper")
    ids: Any = bindparam("ids", expanding=True)
    return update(table).where(table.c.id.in_(ids)).values(**values)


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
