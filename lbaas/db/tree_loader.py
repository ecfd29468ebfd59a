"""A load balancer's whole tree in a handful of Core queries, as plain objects.

Every converge loads one tree. Through the ORM (selectin loading, identity map, loader
options and their cache keys) that cost about 6 ms of CPU for a load balancer with no
children, while SQLite itself spent under half a millisecond; on a two-core machine that
CPU is what a concurrent API request waits for. Here each table is one query keyed by the
load balancer (children through a subquery on their parent, so no id lists are bound),
tables whose parents are absent are not queried, and rows become ``TreeNode`` objects that
carry the same attribute names as the ORM rows, so ``graph_from_row`` and
``status_writer.snapshot_tree`` read either.
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Select, Table, bindparam, select
from sqlalchemy.engine import Connection

from lbaas.db.tables import (
    HealthMonitorRow,
    L7PolicyRow,
    L7RuleRow,
    ListenerRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
    table_of,
)

LOADBALANCERS = table_of(LoadBalancerRow)
LISTENERS = table_of(ListenerRow)
POOLS = table_of(PoolRow)
MEMBERS = table_of(MemberRow)
HEALTH_MONITORS = table_of(HealthMonitorRow)
L7POLICIES = table_of(L7PolicyRow)
L7RULES = table_of(L7RuleRow)


class TreeNode(SimpleNamespace):
    """One stored object: its columns as attributes, plus its children lists.

    ``table`` names where it is stored, for writing its status back.
    """

    table: Table
    id: str
    provisioning_status: str
    operating_status: str


def _grouped(nodes: list[TreeNode], key: str) -> dict[str, list[TreeNode]]:
    out: dict[str, list[TreeNode]] = defaultdict(list)
    for node in nodes:
        out[getattr(node, key)].append(node)
    return out


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


def _nodes(
    conn: Connection, table: Table, stmt: Select[Any], params: dict[str, Any] | None = None
) -> list[TreeNode]:
    rows = conn.execute(stmt, params or {})
    return [TreeNode(table=table, **row._asdict()) for row in rows]


def load_tree(conn: Connection, loadbalancer_id: str) -> TreeNode | None:
    """The load balancer with ``listeners`` (→ ``l7policies`` → ``rules``) and ``pools``
    (→ ``members``, ``health_monitor``), ordered as the ORM relationships order them."""
    params = {"lb_id": loadbalancer_id}
    found = _nodes(conn, LOADBALANCERS, _LOADBALANCER, params)
    if not found:
        return None
    lb = found[0]
    lb.listeners = _nodes(conn, LISTENERS, _LISTENERS, params)
    lb.pools = _nodes(conn, POOLS, _POOLS, params)
    _attach_pool_children(conn, loadbalancer_id, lb.pools)
    _attach_listener_children(conn, loadbalancer_id, lb.listeners)
    return lb


def _children(
    conn: Connection, table: Table, parent_key: str, parent_ids: Any, *order: Any
) -> dict[str, list[TreeNode]]:
    """Rows of ``table`` whose ``parent_key`` is in the subquery ``parent_ids``, grouped."""
    column = table.c[parent_key]
    stmt = select(table).where(column.in_(parent_ids)).order_by(*order)
    return _grouped(_nodes(conn, table, stmt), parent_key)


def _attach_pool_children(conn: Connection, loadbalancer_id: str, pools: list[TreeNode]) -> None:
    members: dict[str, list[TreeNode]] = {}
    monitors: dict[str, list[TreeNode]] = {}
    if pools:
        pool_ids = select(POOLS.c.id).where(POOLS.c.loadbalancer_id == loadbalancer_id)
        members = _children(conn, MEMBERS, "pool_id", pool_ids, MEMBERS.c.created_at, MEMBERS.c.id)
        monitors = _children(conn, HEALTH_MONITORS, "pool_id", pool_ids)
    for pool in pools:
        pool.members = members.get(pool.id, [])
        pool.health_monitor = next(iter(monitors.get(pool.id, [])), None)


def _attach_listener_children(
    conn: Connection, loadbalancer_id: str, listeners: list[TreeNode]
) -> None:
    policies: dict[str, list[TreeNode]] = {}
    rules: dict[str, list[TreeNode]] = {}
    if listeners:
        listener_ids = select(LISTENERS.c.id).where(LISTENERS.c.loadbalancer_id == loadbalancer_id)
        policies = _children(
            conn, L7POLICIES, "listener_id", listener_ids, L7POLICIES.c.position, L7POLICIES.c.id
        )
        if policies:
            policy_ids = select(L7POLICIES.c.id).where(L7POLICIES.c.listener_id.in_(listener_ids))
            rules = _children(
                conn, L7RULES, "l7policy_id", policy_ids, L7RULES.c.created_at, L7RULES.c.id
            )
    for listener in listeners:
        listener.l7policies = policies.get(listener.id, [])
        for policy in listener.l7policies:
            policy.rules = rules.get(policy.id, [])
