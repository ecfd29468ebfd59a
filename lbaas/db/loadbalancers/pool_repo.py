"""Which listeners use a pool: the one pool relation that needs a join.

A listener "uses" a pool when the pool is its default pool, or when an enabled L7 policy
of the listener redirects to the pool and has at least one rule (a policy without rules
never matches, so it does not count). Pool views list those listeners, and pool, member
and health monitor writes lock them; both ask here, for many pools at once, so a list
page costs two queries however long it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from lbaas.db.tables import HealthMonitorRow, L7PolicyRow, L7RuleRow, ListenerRow, MemberRow


def listeners_using_pools(session: Session, pool_ids: Sequence[str]) -> dict[str, list[str]]:
    """Ids of the listeners using each pool (default pool first, then L7 redirects)."""
    out: dict[str, list[str]] = {p: [] for p in pool_ids}
    if not pool_ids:
        return out
    wanted = list(pool_ids)
    defaults = session.execute(
        select(ListenerRow.default_pool_id, ListenerRow.id)
        .where(ListenerRow.default_pool_id.in_(wanted))
        .order_by(ListenerRow.created_at, ListenerRow.id)
    )
    for pool_id, listener_id in defaults:
        if pool_id is not None:
            out[pool_id].append(listener_id)
    has_rule = exists().where(L7RuleRow.l7policy_id == L7PolicyRow.id)
    redirects = session.execute(
        select(L7PolicyRow.redirect_pool_id, L7PolicyRow.listener_id)
        .where(
            L7PolicyRow.redirect_pool_id.in_(wanted),
            L7PolicyRow.admin_state_up.is_(True),
            has_rule,
        )
        .order_by(L7PolicyRow.position, L7PolicyRow.id)
    )
    for pool_id, listener_id in redirects:
        if pool_id is not None and listener_id not in out[pool_id]:
            out[pool_id].append(listener_id)
    return out


def listeners_using_pool(session: Session, pool_id: str) -> list[ListenerRow]:
    """The listener rows using one pool (to lock them with it)."""
    ids = listeners_using_pools(session, [pool_id])[pool_id]
    if not ids:
        return []
    rows = session.scalars(select(ListenerRow).where(ListenerRow.id.in_(ids)))
    by_id = {row.id: row for row in rows}
    return [by_id[i] for i in ids if i in by_id]


def pools_used_by_listener(session: Session, listener_id: str) -> list[str]:
    """Ids of the pools a listener uses (for the ``listener_id`` filter of pool lists)."""
    default = session.scalar(
        select(ListenerRow.default_pool_id).where(ListenerRow.id == listener_id)
    )
    has_rule = exists().where(L7RuleRow.l7policy_id == L7PolicyRow.id)
    redirects = session.scalars(
        select(L7PolicyRow.redirect_pool_id).where(
            L7PolicyRow.listener_id == listener_id,
            L7PolicyRow.redirect_pool_id.is_not(None),
            L7PolicyRow.admin_state_up.is_(True),
            has_rule,
        )
    )
    found = [default] if default else []
    found.extend(p for p in redirects if p is not None and p not in found)
    return found


def member_ids_of_pools(session: Session, pool_ids: Sequence[str]) -> dict[str, list[str]]:
    """Member ids per pool, oldest first, in one query."""
    out: dict[str, list[str]] = {p: [] for p in pool_ids}
    if not pool_ids:
        return out
    rows = session.execute(
        select(MemberRow.pool_id, MemberRow.id)
        .where(MemberRow.pool_id.in_(list(pool_ids)))
        .order_by(MemberRow.created_at, MemberRow.id)
    )
    for pool_id, member_id in rows:
        out[pool_id].append(member_id)
    return out


def pool_of_monitor(session: Session, monitor_id: str) -> list[str]:
    """The id of the pool a health monitor watches, or none (the ``healthmonitor_id``
    filter of pool lists)."""
    hm = session.get(HealthMonitorRow, monitor_id)
    return [hm.pool_id] if hm is not None else []


def policies_redirecting_to(session: Session, pool_id: str) -> list[L7PolicyRow]:
    """The L7 policies that redirect to a pool (any status: they keep it from deletion)."""
    return list(session.scalars(select(L7PolicyRow).where(L7PolicyRow.redirect_pool_id == pool_id)))


def members_and_monitors(
    session: Session, pool_id: str
) -> tuple[list[MemberRow], list[HealthMonitorRow]]:
    """Every member and health monitor row of a pool (a pool delete takes them along)."""
    members = session.scalars(select(MemberRow).where(MemberRow.pool_id == pool_id))
    monitors = session.scalars(select(HealthMonitorRow).where(HealthMonitorRow.pool_id == pool_id))
    return list(members), list(monitors)


def members_of_pool(session: Session, pool_id: str) -> list[MemberRow]:
    """Every member row of a pool, whatever its status."""
    return list(session.scalars(select(MemberRow).where(MemberRow.pool_id == pool_id)))
