"""A load balancer's whole stored tree in a handful of Core queries, typed.

Every converge loads one tree. Through the ORM (selectin loading, identity map, loader
options and their cache keys) that cost about 6 ms of CPU for a load balancer with no
children, while SQLite itself spent under half a millisecond; on a two-core machine that
CPU is what a concurrent API request waits for. Here each table is one query keyed by the
load balancer (children through a subquery on their parent, so no id lists are bound),
tables whose parents are absent are not queried, and rows become the frozen dataclasses of
``lbaas.db.loadbalancers.stored_tree``, built children first. Converge (``graph_loader.graph_from_tree``),
settle (``status_writer.snapshot_tree``), the health manager (``graph_loader.load_graph``)
and the API's ``/status`` tree all read that one shape.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from sqlalchemy import Row, Select, bindparam, select
from sqlalchemy.engine import Connection

from lbaas.db.loadbalancers.stored_tree import (
    CHILD_FIELDS,
    STORED_KINDS,
    StoredHealthMonitor,
    StoredL7Policy,
    StoredL7Rule,
    StoredListener,
    StoredLoadBalancer,
    StoredMember,
    StoredObject,
    StoredPool,
)

LOADBALANCERS = StoredLoadBalancer.table
LISTENERS = StoredListener.table
POOLS = StoredPool.table
MEMBERS = StoredMember.table
HEALTH_MONITORS = StoredHealthMonitor.table
L7POLICIES = StoredL7Policy.table
L7RULES = StoredL7Rule.table


def check_fields_match_columns(kind: type[StoredObject]) -> None:
    """A column without its field (or the reverse) fails here, at import, by name."""
    columns = set(kind.table.c.keys())
    declared = {f.name for f in fields(kind)} - CHILD_FIELDS
    if columns != declared:
        raise TypeError(
            f"{kind.__name__} does not match table {kind.table.name}: "
            f"columns without a field {sorted(columns - declared)}, "
            f"fields without a column {sorted(declared - columns)}"
        )


for _kind in STORED_KINDS:
    check_fields_match_columns(_kind)

_LB_ID: Any = bindparam("lb_id")
_LOADBALANCER = select(LOADBALANCERS).where(LOADBALANCERS.c.id == _LB_ID)
_LISTENERS = (
    select(LISTENERS)
    .where(LISTENERS.c.loadbalancer_id == _LB_ID)
    .order_by(LISTENERS.c.created_at, LISTENERS.c.id)
)
_POOLS = (
    select(POOLS).where(POOLS.c.loadbalancer_id == _LB_ID).order_by(POOLS.c.created_at, POOLS.c.id)
)
_POOL_IDS = select(POOLS.c.id).where(POOLS.c.loadbalancer_id == _LB_ID)
_LISTENER_IDS = select(LISTENERS.c.id).where(LISTENERS.c.loadbalancer_id == _LB_ID)
_MEMBERS = (
    select(MEMBERS)
    .where(MEMBERS.c.pool_id.in_(_POOL_IDS))
    .order_by(MEMBERS.c.created_at, MEMBERS.c.id)
)
_HEALTH_MONITORS = select(HEALTH_MONITORS).where(HEALTH_MONITORS.c.pool_id.in_(_POOL_IDS))
_L7POLICIES = (
    select(L7POLICIES)
    .where(L7POLICIES.c.listener_id.in_(_LISTENER_IDS))
    .order_by(L7POLICIES.c.position, L7POLICIES.c.id)
)
_L7RULES = (
    select(L7RULES)
    .where(
        L7RULES.c.l7policy_id.in_(
            select(L7POLICIES.c.id).where(L7POLICIES.c.listener_id.in_(_LISTENER_IDS))
        )
    )
    .order_by(L7RULES.c.created_at, L7RULES.c.id)
)


def _rows(conn: Connection, stmt: Select[Any], params: Mapping[str, str]) -> list[Row[Any]]:
    return list(conn.execute(stmt, params))


def _by_parent(rows: list[Row[Any]], parent_key: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        columns = row._asdict()
        out[columns[parent_key]].append(columns)
    return out


def load_tree(conn: Connection, loadbalancer_id: str) -> StoredLoadBalancer | None:
    """The load balancer with its listeners (→ L7 policies → rules) and pools (→ members,
    health monitor), children in creation order (policies by position)."""
    params = {"lb_id": loadbalancer_id}
    found = _rows(conn, _LOADBALANCER, params)
    if not found:
        return None
    listeners = _rows(conn, _LISTENERS, params)
    pools = _rows(conn, _POOLS, params)
    return StoredLoadBalancer(
        **found[0]._asdict(),
        listeners=_listeners(conn, listeners, params),
        pools=_pools(conn, pools, params),
    )


def _pools(
    conn: Connection, rows: list[Row[Any]], params: Mapping[str, str]
) -> tuple[StoredPool, ...]:
    if not rows:
        return ()
    members = _by_parent(_rows(conn, _MEMBERS, params), "pool_id")
    monitors = _by_parent(_rows(conn, _HEALTH_MONITORS, params), "pool_id")
    pools = []
    for row in rows:
        columns = row._asdict()
        monitor = monitors.get(columns["id"])
        pools.append(
            StoredPool(
                **columns,
                members=tuple(StoredMember(**m) for m in members.get(columns["id"], ())),
                health_monitor=StoredHealthMonitor(**monitor[0]) if monitor else None,
            )
        )
    return tuple(pools)


def _listeners(
    conn: Connection, rows: list[Row[Any]], params: Mapping[str, str]
) -> tuple[StoredListener, ...]:
    if not rows:
        return ()
    policy_rows = _by_parent(_rows(conn, _L7POLICIES, params), "listener_id")
    rules: dict[str, list[dict[str, Any]]] = {}
    if policy_rows:
        rules = _by_parent(_rows(conn, _L7RULES, params), "l7policy_id")
    listeners = []
    for row in rows:
        columns = row._asdict()
        policies = tuple(
            StoredL7Policy(
                **policy, rules=tuple(StoredL7Rule(**r) for r in rules.get(policy["id"], ()))
            )
            for policy in policy_rows.get(columns["id"], ())
        )
        listeners.append(StoredListener(**columns, l7policies=policies))
    return tuple(listeners)
