"""Reads the listener and L7 API needs that must come back in a defined order.

Listener views list their policies in evaluation order and policy views list their rules
in creation order; positions are renumbered from the policies in order. The generic
``table_rows.children_ids`` does not order, hence these two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from lbaas.db.tables import L7PolicyRow, L7RuleRow
from lbaas.model.enums import ProvisioningStatus

_DELETED = ProvisioningStatus.DELETED.value
_GONE = (_DELETED, ProvisioningStatus.PENDING_DELETE.value)


def _existing_children_ids(
    session: Session,
    table: type[L7PolicyRow] | type[L7RuleRow],
    parent: str,
    parent_ids: Sequence[str],
    order: Sequence[InstrumentedAttribute[Any]],
) -> dict[str, list[str]]:
    """Ids of the rows of ``table`` that are not DELETED, grouped by their ``parent``
    column, each group in ``order`` (then by id), in one query."""
    out: dict[str, list[str]] = {p: [] for p in parent_ids}
    if not parent_ids:
        return out
    parent_column = getattr(table, parent)
    stmt = (
        select(parent_column, table.id)
        .where(parent_column.in_(list(parent_ids)), table.provisioning_status != _DELETED)
        .order_by(*order, table.id)
    )
    for parent_id, child in session.execute(stmt):
        out[parent_id].append(child)
    return out


def policies_in_order(session: Session, listener_id: str) -> list[L7PolicyRow]:
    """A listener's policies that are not being deleted, in evaluation order."""
    stmt = (
        select(L7PolicyRow)
        .where(
            L7PolicyRow.listener_id == listener_id,
            L7PolicyRow.provisioning_status.not_in(_GONE),
        )
        .order_by(L7PolicyRow.position, L7PolicyRow.created_at, L7PolicyRow.id)
    )
    return list(session.scalars(stmt))


def live_policies_and_rules(
    session: Session, listener_id: str
) -> tuple[list[L7PolicyRow], list[L7RuleRow]]:
    """The listener's policies and their rules that are not DELETED (a delete takes them)."""
    policies = list(
        session.scalars(
            select(L7PolicyRow).where(
                L7PolicyRow.listener_id == listener_id,
                L7PolicyRow.provisioning_status != _DELETED,
            )
        )
    )
    rules = list(
        session.scalars(
            select(L7RuleRow).where(
                L7RuleRow.l7policy_id.in_([p.id for p in policies]),
                L7RuleRow.provisioning_status != _DELETED,
            )
        )
    )
    return policies, rules


def live_rules_of(session: Session, policy_id: str) -> list[L7RuleRow]:
    """A policy's rules that are not DELETED (a policy delete takes them)."""
    return list(
        session.scalars(
            select(L7RuleRow).where(
                L7RuleRow.l7policy_id == policy_id, L7RuleRow.provisioning_status != _DELETED
            )
        )
    )


def policy_ids_in_order(session: Session, listener_ids: Sequence[str]) -> dict[str, list[str]]:
    """Ids of each listener's policies (not DELETED) in evaluation order."""
    order = [L7PolicyRow.position, L7PolicyRow.created_at]
    return _existing_children_ids(session, L7PolicyRow, "listener_id", listener_ids, order)


def rule_ids_in_order(session: Session, policy_ids: Sequence[str]) -> dict[str, list[str]]:
    """Ids of each policy's rules (not DELETED), oldest first."""
    order = [L7RuleRow.created_at]
    return _existing_children_ids(session, L7RuleRow, "l7policy_id", policy_ids, order)
