"""Storage of security groups and their rules (the embedded registry's tables)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, delete, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from lbaas.db.tables import (
    LoadBalancerRow,
    SecurityGroupRow,
    SecurityGroupRuleRow,
    table_of,
)
from lbaas.model.enums import GONE_STATUSES
from lbaas.model.security_rules import IngressRule, protocol_number

_RULES = table_of(SecurityGroupRuleRow).c
# Built once: every converge of a load balancer with groups reads it.
_INGRESS = select(
    _RULES.ethertype,
    _RULES.protocol,
    _RULES.port_range_min,
    _RULES.port_range_max,
    _RULES.remote_ip_prefix,
    _RULES.remote_group_id,
).where(
    _RULES.security_group_id.in_(bindparam("ids", expanding=True)),
    _RULES.direction == "ingress",
)


def ingress_rules(conn: Connection, group_ids: Sequence[str]) -> list[IngressRule]:
    """The ingress rules of ``group_ids`` (a group that no longer exists has none)."""
    if not group_ids:
        return []
    return [
        IngressRule(
            ethertype=r.ethertype,
            protocol=protocol_number(r.protocol),
            port_range_min=r.port_range_min,
            port_range_max=r.port_range_max,
            remote_ip_prefix=r.remote_ip_prefix,
            remote_group_id=r.remote_group_id,
        )
        for r in conn.execute(_INGRESS, {"ids": list(group_ids)})
    ]


def get_group(session: Session, group_id: str) -> SecurityGroupRow | None:
    return session.get(SecurityGroupRow, group_id)


def get_rule(session: Session, rule_id: str) -> SecurityGroupRuleRow | None:
    return session.get(SecurityGroupRuleRow, rule_id)


def all_groups(session: Session) -> list[SecurityGroupRow]:
    return list(session.scalars(select(SecurityGroupRow).order_by(SecurityGroupRow.created_at)))


def all_rules(session: Session) -> list[SecurityGroupRuleRow]:
    query = select(SecurityGroupRuleRow).order_by(SecurityGroupRuleRow.created_at)
    return list(session.scalars(query))


def rules_of(session: Session, group_ids: Sequence[str]) -> list[SecurityGroupRuleRow]:
    query = (
        select(SecurityGroupRuleRow)
        .where(SecurityGroupRuleRow.security_group_id.in_(list(group_ids)))
        .order_by(SecurityGroupRuleRow.created_at, SecurityGroupRuleRow.id)
    )
    return list(session.scalars(query))


def loadbalancers_using(session: Session, project_id: str, group_id: str) -> list[str]:
    """Ids of the project's live load balancers whose ``vip_sg_ids`` name the group.

    ``vip_sg_ids`` is a JSON list, so the match is made here over the project's load
    balancers that have any group (a group and its users share the project)."""
    query = select(LoadBalancerRow.id, LoadBalancerRow.vip_sg_ids).where(
        LoadBalancerRow.project_id == project_id,
        LoadBalancerRow.provisioning_status.not_in([s.value for s in GONE_STATUSES]),
    )
    return [row.id for row in session.execute(query) if group_id in (row.vip_sg_ids or [])]


def delete_group(session: Session, group_id: str) -> None:
    """The group and its rules, in Core, children first (the ORM orders neither)."""
    session.execute(delete(SecurityGroupRuleRow).where(_RULES.security_group_id == group_id))
    session.execute(delete(SecurityGroupRow).where(SecurityGroupRow.id == group_id))
