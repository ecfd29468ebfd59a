"""Project scoping of lists, as Octavia's policy does it.

Callers allowed to read globally see every project unless they filter by ``project_id``;
everyone else sees their own project, and asking for another project's list is a 403.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from lbaas.errors import Forbidden
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, allowed, authorize


def list_scope(
    request: Request,
    ctx: RequestContext,
    project_column: Any,
    *,
    global_rule: Rule = Rule.READ_GLOBAL,
) -> list[Any]:
    """Conditions restricting a list to what the caller may see (after authorising)."""
    requested = request.query_params.get("project_id")
    if allowed(ctx, global_rule):
        return []  # a project_id filter, if any, is applied as an ordinary filter
    if ctx.project_id is None:
        raise Forbidden()
    if requested is not None and requested != ctx.project_id:
        raise Forbidden()
    authorize(ctx, Rule.READ, ctx.project_id)
    return [project_column == ctx.project_id]
