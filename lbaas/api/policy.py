"""The default RBAC policy of Octavia v2, as a few small rules.

``read`` / ``write`` / ``read_global`` / quota and admin rules are exactly the building
blocks of the reference policy; each endpoint names one. A project-scoped rule passes only
when the caller's project owns the target. A refusal is 403 with Octavia's message.
"""

from __future__ import annotations

from enum import Enum

from lbaas.api.context import RequestContext
from lbaas.errors import Forbidden


class Rule(Enum):
    READ = "read"
    READ_GLOBAL = "read_global"
    WRITE = "write"
    ADMIN = "admin"
    READ_QUOTA = "read_quota"
    READ_QUOTA_GLOBAL = "read_quota_global"
    WRITE_QUOTA = "write_quota"
    READ_MEMBERS = "read_members"  # read, or the service role on any project


def allowed(ctx: RequestContext, rule: Rule, target_project: str | None = None) -> bool:
    owner = target_project is not None and ctx.project_id == target_project
    if ctx.is_admin:
        return True
    if rule is Rule.ADMIN:
        return False
    if rule is Rule.READ:
        return ctx.has("global_observer") or (owner and (ctx.has("reader") or ctx.has("member")))
    if rule is Rule.READ_MEMBERS:
        return ctx.has("service") or allowed(ctx, Rule.READ, target_project)
    if rule is Rule.READ_GLOBAL:
        return ctx.has("global_observer")
    if rule is Rule.WRITE:
        return owner and ctx.has("member")
    if rule is Rule.READ_QUOTA:
        return ctx.has("quota_admin") or allowed(ctx, Rule.READ, target_project)
    if rule is Rule.READ_QUOTA_GLOBAL:
        return ctx.has("global_observer") or ctx.has("quota_admin")
    if rule is Rule.WRITE_QUOTA:
        return ctx.has("quota_admin")
    return False


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
