"""The pool object as Octavia renders it, plain and "fully populated".

The plain view lists related objects as ``[{"id"}]``: its load balancer, the listeners
using it (default pool, or redirect target of an enabled L7 policy that has rules), its
members, and ``healthmonitor_id``. The full view is what the single-call load balancer
create answers: members and the health monitor expanded, no ``loadbalancers`` and no
``healthmonitor_id``. Both render any number of pools with a fixed number of queries.
"""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import described_object, ids
from lbaas.api.views.healthmonitor import render_healthmonitors
from lbaas.api.views.member import render_members
from lbaas.db import table_rows
from lbaas.db.listing import tags_of
from lbaas.db.loadbalancers import pool_repo
from lbaas.db.session import Session
from lbaas.db.tables import HealthMonitorRow, MemberRow, PoolRow

PERSISTENCE_KEYS = ("type", "cookie_name", "persistence_timeout", "persistence_granularity")


def persistence_view(stored: dict[str, object] | None) -> dict[str, object] | None:
    """All four keys, or null when the pool has no session persistence."""
    if not stored:
        return None
    return {key: stored.get(key) for key in PERSISTENCE_KEYS}


def _base(row: PoolRow, listener_ids: list[str], tags: list[str]) -> dict[str, Any]:
    return {
        **described_object(row),
        "protocol": row.protocol,
        "lb_algorithm": row.lb_algorithm,
        "session_persistence": persistence_view(row.session_persistence),
        "listeners": ids(listener_ids),
        "tags": tags,
        "tls_enabled": row.tls_enabled,
        "tls_container_ref": row.tls_container_ref,
        "ca_tls_container_ref": row.ca_tls_container_ref,
        "crl_container_ref": row.crl_container_ref,
        "tls_ciphers": row.tls_ciphers,
        "tls_versions": list(row.tls_versions) if row.tls_versions is not None else None,
        "alpn_protocols": list(row.alpn_protocols) if row.alpn_protocols is not None else None,
        "lbaas_member_down_policy": row.member_down_policy,
    }


def pool_view(
    row: PoolRow,
    listener_ids: list[str],
    member_ids: list[str],
    healthmonitor_id: str | None,
    tags: list[str],
) -> dict[str, Any]:
    view = {
        **_base(row, listener_ids, tags),
        "loadbalancers": ids([row.loadbalancer_id]),
        "members": ids(member_ids),
    }
    # Octavia sets the attribute only when the pool has a monitor; WSME leaves an unset
    # attribute out of the JSON, so a pool without one has no ``healthmonitor_id`` at all.
    if healthmonitor_id is not None:
        view["healthmonitor_id"] = healthmonitor_id
    return view


def render_pools(session: Session, rows: list[PoolRow]) -> list[dict[str, Any]]:
    """Plain views of many pools in four queries."""
    pool_ids = [r.id for r in rows]
    listeners = pool_repo.listeners_using_pools(session, pool_ids)
    members = pool_repo.member_ids_of_pools(session, pool_ids)
    monitors = table_rows.children_ids(
        session, HealthMonitorRow.id, HealthMonitorRow.pool_id, pool_ids
    )
    tags = tags_of(session, pool_ids)
    return [
        pool_view(
            r,
            listeners[r.id],
            members[r.id],
            monitors[r.id][0] if monitors[r.id] else None,
            tags[r.id],
        )
        for r in rows
    ]


def render_pool(session: Session, row: PoolRow) -> dict[str, Any]:
    return render_pools(session, [row])[0]


def render_pools_full(session: Session, rows: list[PoolRow]) -> list[dict[str, Any]]:
    """Fully populated views (members and health monitor expanded), as graph create answers."""
    pool_ids = [r.id for r in rows]
    if not pool_ids:
        return []
    listeners = pool_repo.listeners_using_pools(session, pool_ids)
    member_rows: list[MemberRow] = table_rows.find_rows(
        session, MemberRow, MemberRow.pool_id.in_(pool_ids)
    )
    member_rows.sort(key=lambda m: (m.created_at, m.id))
    monitor_rows: list[HealthMonitorRow] = table_rows.find_rows(
        session, HealthMonitorRow, HealthMonitorRow.pool_id.in_(pool_ids)
    )
    tags = tags_of(session, pool_ids)
    members: dict[str, list[dict[str, Any]]] = {p: [] for p in pool_ids}
    for member, view in zip(member_rows, render_members(session, member_rows), strict=True):
        members[member.pool_id].append(view)
    monitors = {
        hm.pool_id: view
        for hm, view in zip(monitor_rows, render_healthmonitors(session, monitor_rows), strict=True)
    }
    return [
        {
            **_base(r, listeners[r.id], tags[r.id]),
            "members": members[r.id],
            "healthmonitor": monitors.get(r.id),
        }
        for r in rows
    ]
