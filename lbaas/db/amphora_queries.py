"""Reads the amphora API needs: ownership through the load balancer, and counters.

An amphora has no project of its own; Octavia's ``project_id`` filter on the amphora list
means "amphorae of load balancers owned by that project", which is a sub-query kept here
so the API layer never builds SQL itself.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from lbaas.db.tables import AmphoraRow, ListenerStatsRow, LoadBalancerRow, MemberRow, PoolRow


def owned_by_project(project_id: str) -> ColumnElement[bool]:
    """Condition: the amphora serves a load balancer of ``project_id``."""
    owned = select(LoadBalancerRow.id).where(LoadBalancerRow.project_id == project_id)
    return AmphoraRow.loadbalancer_id.in_(owned.scalar_subquery())


def listener_counters(session: Session, amphora_id: str) -> list[ListenerStatsRow]:
    """The stored counters of every listener the amphora reported, by listener id."""
    return list(
        session.scalars(
            select(ListenerStatsRow)
            .where(ListenerStatsRow.amphora_id == amphora_id)
            # Pools' and members' records share the table: only listeners' are shown.
            .where(ListenerStatsRow.listener_id.not_in(select(PoolRow.id)))
            .where(ListenerStatsRow.listener_id.not_in(select(MemberRow.id)))
            .order_by(ListenerStatsRow.listener_id)
        )
    )
