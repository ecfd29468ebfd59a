"""Request schemas of L7 rules (wrapper key ``rule``).

Only the shape is checked here; whether a type, comparison, key and value make sense
together is ``lbaas.api.validation.l7.validate_rule``, because a PUT must judge the stored
rule merged with the request, which no schema can see.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from lbaas.api.schemas.types import AdminState, ProjectRef, Schema, Tags
from lbaas.model.enums import L7CompareType, L7RuleType

RuleText = Annotated[str, Field(max_length=255)]


class L7RuleCommon(Schema):
    """A rule as created, standalone or nested in a policy of the graph create."""

    type: L7RuleType
    compare_type: L7CompareType
    key: RuleText | None = None
    value: RuleText
    # bool where JSON null means false (like admin_state_up).
    invert: AdminState = False
    admin_state_up: AdminState = True
    tags: Tags | None = None


class L7RuleCreate(L7RuleCommon):
    # Deprecated and ignored: a rule belongs to its load balancer's project.
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None


class L7RuleCreateBody(Schema):
    rule: L7RuleCreate


class L7RuleUpdate(Schema):
    type: L7RuleType | None = None
    compare_type: L7CompareType | None = None
    key: RuleText | None = None
    value: RuleText | None = None
    invert: AdminState | None = None
    admin_state_up: AdminState | None = None
    tags: Tags | None = None


class L7RuleUpdateBody(Schema):
    rule: L7RuleUpdate
