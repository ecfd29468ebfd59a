"""L7 rule rows from requests: create (standalone, inline in a policy, graph) and update."""

from __future__ import annotations

from datetime import datetime

from lbaas.api.builders.common import add_new_row, new_object_columns
from lbaas.api.capabilities import require_capability
from lbaas.api.schemas.l7rule import L7RuleCommon, L7RuleUpdate
from lbaas.api.services import ApiServices
from lbaas.api.validation.l7 import MAX_RULES_PER_POLICY, validate_rule
from lbaas.db import table_rows
from lbaas.db.listing import set_tags
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, LoadBalancerRow
from lbaas.errors import Conflict, InvalidInput
from lbaas.model.enums import L7CompareType, L7RuleType, ProvisioningStatus

_GONE = (ProvisioningStatus.DELETED.value, ProvisioningStatus.PENDING_DELETE.value)


def _check_type(services: ApiServices, lb: LoadBalancerRow, rule_type: L7RuleType) -> None:
    require_capability(services, lb.provider, "L7 rule type", rule_type, "l7_rule_types")


def build_l7rule(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    policy: L7PolicyRow,
    data: L7RuleCommon,
    now: datetime,
) -> L7RuleRow:
    """Validate a new rule of ``policy`` (its load balancer ``lb`` already locked), add it.

    Refuses the 51st rule of a policy with 409, counting rules already in the session.
    """
    rule_type, compare = L7RuleType(data.type), L7CompareType(data.compare_type)
    _check_type(services, lb, rule_type)
    validate_rule(rule_type, compare, data.key, data.value)
    in_use = table_rows.count_rows(
        session,
        L7RuleRow,
        L7RuleRow.l7policy_id == policy.id,
        L7RuleRow.provisioning_status.not_in(_GONE),
    )
    if in_use >= MAX_RULES_PER_POLICY:
        raise Conflict(f"Too many rules on L7 policy {policy.id}")
    row = L7RuleRow(
        **new_object_columns(policy.project_id, now, data=data),
        l7policy_id=policy.id,
        admin_state_up=bool(data.admin_state_up),
        type=rule_type.value,
        compare_type=compare.value,
        key=data.key,
        value=data.value,
        invert=bool(data.invert),
    )
    return add_new_row(session, row, data.tags)


def update_l7rule(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    row: L7RuleRow,
    data: L7RuleUpdate,
    now: datetime,
) -> None:
    """Validate the stored rule merged with a PUT and write it (statuses are the caller's)."""
    for name in ("type", "compare_type", "value"):
        if data.given(name) and getattr(data, name) is None:
            raise InvalidInput(
                f"Invalid input for field/attribute {name}. Value: 'None'. Mandatory field missing."
            )
    rule_type = L7RuleType(data.type if data.type is not None else row.type)
    compare = L7CompareType(
        data.compare_type if data.compare_type is not None else row.compare_type
    )
    key = data.key if data.given("key") else row.key
    value = data.value if data.value is not None else row.value
    if data.type is not None:
        _check_type(services, lb, rule_type)
    validate_rule(rule_type, compare, key, value)
    row.type, row.compare_type = rule_type.value, compare.value
    row.key, row.value = key, value
    if data.given("invert"):
        row.invert = bool(data.invert)
    if data.given("admin_state_up"):
        row.admin_state_up = bool(data.admin_state_up)
    if data.tags is not None:
        set_tags(session, row.id, data.tags)
    row.updated_at = now
