"""Octavia's RBAC, asked the way the handlers think of it: read, write, admin, quotas.

A handler names the building block it needs (``Rule.READ`` on the target's project);
when the route it serves is one of Octavia's endpoints, the endpoint's own rule
(``os_load-balancer_api:loadbalancer:get_one``) that defaults to that building block is
asked instead, so an operator's policy file can change one endpoint alone. Lookups of a
parent object (the pool of a member) ask the building block itself. A refusal is 403
with Octavia's message.
"""

from __future__ import annotations

from enum import Enum

from lbaas.errors import Forbidden
from lbaas.identity import api_rules
from lbaas.identity.context import RequestContext


class Rule(Enum):
    READ = api_rules.READ
    READ_GLOBAL = api_rules.READ_GLOBAL
    WRITE = api_rules.WRITE
    ADMIN = api_rules.ADMIN
    READ_QUOTA = api_rules.READ_QUOTA
    READ_QUOTA_GLOBAL = api_rules.READ_QUOTA_GLOBAL
    WRITE_QUOTA = api_rules.WRITE_QUOTA
    READ_MEMBERS = api_rules.MEMBERS_LIST  # read, or the service role on any project


def allowed(ctx: RequestContext, rule: Rule, target_project: str | None = None) -> bool:
    target = {} if target_project is None else {"project_id": target_project}
    names = [e.name for e in ctx.endpoint_rules if e.stands_for == rule.value] or [rule.value]
    return all(ctx.policy.allows(name, target, ctx.credentials) for name in names)


def authorize(ctx: RequestContext, rule: Rule, target_project: str | None = None) -> None:
    """Raise Forbidden unless the caller may do this to the target project's objects."""
    if not allowed(ctx, rule, target_project):
        raise Forbidden()


def require_admin(ctx: RequestContext) -> None:
    """Catalog writes and operator views: admins only."""
    authorize(ctx, Rule.ADMIN, ctx.project_id)


def require_reader(ctx: RequestContext) -> None:
    """Catalog reads: anyone who may read their own project's objects."""
    authorize(ctx, Rule.READ, ctx.project_id)


def _names_an_id(data: object) -> bool:
    """Whether a request object, or one nested in it (a policy's rules, a pool's members
    and monitor, a listener's policies), gives an id."""
    if getattr(data, "id", None) is not None:
        return True
    for value in getattr(data, "__dict__", {}).values():
        items = value if isinstance(value, list) else [value]
        if any(hasattr(i, "model_fields") and _names_an_id(i) for i in items):
            return True
    return False


def check_given_id(ctx: RequestContext, data: object) -> None:
    """A create that names its object's id, or the id of an object nested in it (the
    ``GivenId`` extension, sent by Octavia's lbaas provider driver): administrators only,
    so no project can squat ids."""
    if _names_an_id(data):
        require_admin(ctx)
