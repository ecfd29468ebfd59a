"""Who is calling: the request context, built from Keystone-style headers.

Whatever established the caller, the application sees the headers Keystone's
``auth_token`` middleware sets (``X-Project-Id``, ``X-Roles``, ``X-User-Id``,
``X-Service-Roles``, ``OpenStack-System-Scope``): with ``keystone``, lbaas's own token
middleware (``token_middleware``) replaced whatever the client sent with what Keystone
said; with ``keystone_headers``, a trusted proxy did; with ``noauth`` they are taken as
sent, and a caller that sends none acts in the configured default project with the
configured default roles, so the stock clients with ``--os-auth-type none`` just work.

The context carries the credentials dict oslo.policy reads (the same keys oslo.context
gives it) and the endpoint rules of the route being served, so ``policy.allowed`` can
ask Octavia's rule of that endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request

from lbaas.config import ApiSettings
from lbaas.errors import InvalidInput
from lbaas.identity.api_rules import EndpointRule, rules_of_route

PROJECT_ID_MAX = 36


class PolicyCheck(Protocol):
    def allows(self, rule: str, target: Mapping[str, Any], creds: Mapping[str, Any]) -> bool: ...


@dataclass(frozen=True)
class RequestContext:
    project_id: str | None
    roles: frozenset[str]
    is_admin: bool
    request_id: str
    policy: PolicyCheck
    #: What oslo.policy is given as the caller (roles, project_id, is_admin, ...).
    credentials: Mapping[str, Any]
    #: Octavia's rules guarding the route being served (none for lbaas's own routes).
    endpoint_rules: tuple[EndpointRule, ...] = ()


def _roles_from_header(raw: str | None) -> frozenset[str]:
    if raw is None:
        return frozenset()
    return frozenset(r.strip().lower() for r in raw.split(",") if r.strip())


def _implied(roles: frozenset[str]) -> frozenset[str]:
    """Keystone's default role implications (admin ⊃ member ⊃ reader): a token carries
    them already; a header written by hand may not."""
    out = set(roles)
    if "admin" in out:
        out.add("member")
    if "member" in out:
        out.add("reader")
    return frozenset(out)


def _caller(request: Request, settings: ApiSettings) -> tuple[str | None, frozenset[str]]:
    headers = request.headers
    project = headers.get("x-project-id") or headers.get("x-tenant-id")
    roles_header = headers.get("x-roles")
    if settings.auth_strategy == "noauth":
        project = project or settings.default_project_id
        if not roles_header:
            return project, frozenset(r.lower() for r in settings.default_roles)
    if project is not None and len(project) > PROJECT_ID_MAX:
        # Every project_id column is 36 characters; PostgreSQL would refuse the write (500).
        raise InvalidInput(
            f"Invalid input for field/attribute project_id. Value: '{project}'. "
            f"Value should have a maximum character requirement of {PROJECT_ID_MAX}"
        )
    return project, _roles_from_header(roles_header)


def build_context(
    request: Request,
    settings: ApiSettings,
    request_id: str,
    policy: PolicyCheck,
    route: str | None = None,
) -> RequestContext:
    """Read identity from the headers and ask the policy whether the caller is an admin;
    ``route`` is the path template served (``/v2/lbaas/loadbalancers/{lb_id}``)."""
    project, raw_roles = _caller(request, settings)
    roles = _implied(raw_roles)
    headers = request.headers
    creds: dict[str, Any] = {
        "project_id": project,
        "user_id": headers.get("x-user-id"),
        "roles": sorted(roles),
        "service_roles": sorted(_roles_from_header(headers.get("x-service-roles"))),
        "system_scope": headers.get("openstack-system-scope"),
    }
    is_admin = policy.allows("context_is_admin", {}, creds)
    creds["is_admin"] = is_admin
    return RequestContext(
        project,
        roles,
        is_admin,
        request_id,
        policy,
        creds,
        rules_of_route(request.method, route or ""),
    )
