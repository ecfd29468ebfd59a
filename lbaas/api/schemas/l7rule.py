"""Request schemas of L7 rules (wrapper key ``rule``).

Only the shape is checked here; whether a type, comparison, key and value make sense
together is ``lbaas.api.validation.l7.validate_rule``, because a PUT must judge the stored
rule merged with the request, which no schema can see.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from lbaas.api.schemas.groups import (
    EnabledChange,
    EnabledOnCreate,
    GivenId,
    ProjectOnCreate,
    Tagged,
)
from lbaas.api.schemas.types import NullFalse, Schema
from lbaas.model.enums import L7CompareType, L7RuleType

RuleText = Annotated[str, Field(max_length=255)]


class L7RuleOptions(Tagged):
    """Fields both create and update accept (all optional)."""

    key: RuleText | None = None


class L7RuleCommon(L7RuleOptions, EnabledOnCreate):
    """A rule as created, standalone or nested in a policy of the graph create."""

    type: L7RuleType
    compare_type: L7CompareType
    value: RuleText
    invert: NullFalse = False


class L7RuleNested(L7RuleCommon, GivenId):
    """A rule nested in a policy (standalone or graph create), its id given or not."""


class L7RuleCreate(L7RuleCommon, ProjectOnCreate):
    pass


class L7RuleCreateBody(Schema):
    rule: L7RuleCreate


# What a PUT may change: the options, plus what a create requires or gives a default.
class L7RuleUpdate(L7RuleOptions, EnabledChange):
    type: L7RuleType | None = None
    compare_type: L7CompareType | None = None
    value: RuleText | None = None
    invert: NullFalse | None = None


class L7RuleUpdateBody(Schema):
    rule: L7RuleUpdate
