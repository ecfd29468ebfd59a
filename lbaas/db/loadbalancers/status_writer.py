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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, delete, update
from sqlalchemy.orm import Session

from lbaas.db.loadbalancers import tree_loader
from lbaas.db.loadbalancers.stored_tree import StoredLoadBalancer, StoredObject, walk
from lbaas.db.tables import (
    ListenerStatsRow,
    PortRow,
    TagRow,
    table_of,
)
from lbaas.model.enums import PENDING_CHANGE_STATUSES, OperatingStatus, ProvisioningStatus

ACTIVE = ProvisioningStatus.ACTIVE.value
ERROR = ProvisioningStatus.ERROR.value


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


def snapshot_tree(lb: StoredLoadBalancer) -> TreeSnapshot:
    """What ``finish_applied`` needs of a tree loaded by ``tree_loader.load_tree``."""
    rows = tuple(
        SettleRow(row.table, row.id, row.provisioning_status, row.operating_status, doomed)
        for row, doomed in walk(lb)
    )
    return TreeSnapshot(lb.id, rows)


_LISTENERS = tree_loader.LISTENERS
_POOLS = tree_loader.POOLS
_STATS = table_of(ListenerStatsRow)
_COUNTED = (_LISTENERS, _POOLS, tree_loader.MEMBERS)
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
            if row.table in _COUNTED:  # counter records are keyed by the object's id
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


# Children before the rows they reference: rules → policies → listeners (which point at
# pools) → members and monitors → pools.
_DELETION_ORDER = (
    tree_loader.L7RULES,
    tree_loader.L7POLICIES,
    tree_loader.LISTENERS,
    tree_loader.MEMBERS,
    tree_loader.HEALTH_MONITORS,
    tree_loader.POOLS,
)
_LOADBALANCERS = tree_loader.LOADBALANCERS
_PORTS = table_of(PortRow)


def finish_deleted(session: Session, loadbalancer_id: str, now: datetime) -> None:
    """The data plane is gone: remove the tree, release the VIP, keep a DELETED stub."""
    conn = session.connection()
    lb = tree_loader.load_tree(conn, loadbalancer_id)
    if lb is None:
        return
    doomed = _ids_by_table(lb, lambda row: row.table is not _LOADBALANCERS)
    every_id = [lb.id, *(i for ids in doomed.values() for i in ids)]
    conn.execute(delete(_TAGS).where(_TAGS.c.resource_id.in_(every_id)))
    conn.execute(delete(_STATS).where(_STATS.c.loadbalancer_id == lb.id))
    for table in _DELETION_ORDER:
        if doomed[table]:
            conn.execute(delete(table).where(table.c.id.in_(doomed[table])))
    if lb.vip_port_id:
        conn.execute(delete(_PORTS).where(_PORTS.c.id == lb.vip_port_id))
    conn.execute(delete(_PORTS).where(_PORTS.c.device_id == lb.id))
    conn.execute(
        update(_LOADBALANCERS)
        .where(_LOADBALANCERS.c.id == lb.id)
        .values(
            provisioning_status=ProvisioningStatus.DELETED.value,
            operating_status=OperatingStatus.OFFLINE.value,
            updated_at=now,
        )
    )


def finish_failed(session: Session, loadbalancer_id: str, now: datetime) -> None:
    """Give up: the load balancer and everything pending (but deletions) go to ERROR."""
    conn = session.connection()
    lb = tree_loader.load_tree(conn, loadbalancer_id)
    if lb is None:
        return
    failing = _ids_by_table(lb, _fails)
    for table, ids in failing.items():
        conn.execute(_status_update(table, True, False), {"ids": ids, "now": now, "prov": ERROR})


def fail_loadbalancer_row(session: Session, loadbalancer_id: str, now: datetime) -> None:
    """ERROR on the load balancer row alone, touching no other column: for a give-up
    when the tree cannot be loaded (the schema lacks a column the loader reads)."""
    session.connection().execute(
        _status_update(_LOADBALANCERS, True, False),
        {"ids": [loadbalancer_id], "now": now, "prov": ERROR},
    )


def _fails(row: StoredObject) -> bool:
    """Whether a failed converge sets ``row`` to ERROR: what was pending, and the LB."""
    pending = row.provisioning_status in PENDING_CHANGE_STATUSES
    return pending or (row.table is _LOADBALANCERS and row.provisioning_status != ERROR)


def _ids_by_table(
    lb: StoredLoadBalancer, chosen: Callable[[StoredObject], bool]
) -> defaultdict[Table, list[str]]:
    """Ids of the rows of the tree that are ``chosen``, by table (children first)."""
    ids: defaultdict[Table, list[str]] = defaultdict(list)
    for row, _ in walk(lb):
        if chosen(row):
            ids[row.table].append(row.id)
    return ids


# The tables whose operating statuses the health manager writes, by the name of the kind.
OPERATING_TABLES: dict[str, Table] = {  # keys: OperatingStatuses.by_kind()
    "loadbalancer": tree_loader.LOADBALANCERS,
    "listeners": tree_loader.LISTENERS,
    "pools": tree_loader.POOLS,
    "members": tree_loader.MEMBERS,
    "health_monitors": tree_loader.HEALTH_MONITORS,
    "l7policies": tree_loader.L7POLICIES,
    "l7rules": tree_loader.L7RULES,
}


@functools.cache
def _operating_update(table: Table) -> Any:
    ids: Any = bindparam("ids", expanding=True)
    return (
        update(table)
        .where(table.c.id.in_(ids), table.c.operating_status != bindparam("observed"))
        .values(operating_status=bindparam("observed"), updated_at=bindparam("now"))
    )


def apply_operating_statuses(
    session: Session,
    by_kind: Mapping[str, Mapping[str, OperatingStatus]],
    now: datetime,
) -> None:
    """Record observed health without touching provisioning statuses.

    Runs for every heartbeat, so it reads nothing: one UPDATE per (kind, status) that
    only matches the rows whose status differs — in the steady state, writes that touch
    no row. ``by_kind`` maps a key of ``OPERATING_TABLES`` to {object id: status}.
    """
    conn = session.connection()
    for kind, statuses in by_kind.items():
        groups: dict[str, list[str]] = defaultdict(list)
        for object_id, status in statuses.items():
            groups[status.value].append(object_id)
        for observed, ids in groups.items():
            params = {"ids": ids, "observed": observed, "now": now}
            conn.execute(_operating_update(OPERATING_TABLES[kind]), params)
