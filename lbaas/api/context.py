"""Who is calling: the request context built from Keystone-style headers.

lbaas never validates tokens itself. A Keystone ``auth_token`` middleware (or any proxy
doing the same job) in front of the API sets ``X-Project-Id`` and ``X-Roles``; lbaas reads
them. With no such headers (the embedded default), the caller acts in the configured
default project with the configured default roles, so the stock clients with
``--os-auth-type none`` just work — and putting Keystone in front later changes no handler.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from lbaas.config import ApiSettings
from lbaas.errors import InvalidInput

ADMIN_ROLES = frozenset({"admin"})
PROJECT_ID_MAX = 36
DEPRECATED_ROLES = {
    "load-balancer_admin": "admin",
    "load-balancer_global_observer": "global_observer",
    "load-balancer_member": "member",
    "load-balancer_observer": "reader",
    "load-balancer_quota_admin": "quota_admin",
}


@dataclass(frozen=True)
class RequestContext:
    project_id: str | None
    roles: frozenset[str]
    is_admin: bool
    request_id: str

    def has(self, role: str) -> bool:
        return role in self.roles


def _roles_from_header(raw: str | None) -> frozenset[str]:
    if raw is None:
        return frozenset()
    return frozenset(r.strip().lower() for r in raw.split(",") if r.strip())


def build_context(request: Request, settings: ApiSettings, request_id: str) -> RequestContext:
    """Read identity from the headers the auth middleware sets."""
    headers = request.headers
    project = headers.get("x-project-id") or headers.get("x-tenant-id")
    roles_header = headers.get("x-roles")
    if settings.auth_strategy == "noauth":
        project = project or settings.default_project_id
        roles = (
            _roles_from_header(roles_header) if roles_header else frozenset(settings.default_roles)
        )
    else:
        roles = _roles_from_header(roles_header)
    if project is not None and len(project) > PROJECT_ID_MAX:
        # Every project_id column is 36 characters; PostgreSQL would refuse the write (500).
        raise InvalidInput(
            f"Invalid input for field/attribute project_id. Value: '{project}'. "
            f"Value should have a maximum character requirement of {PROJECT_ID_MAX}"
        )
    normalised = set(roles)
    if not settings.enforce_new_defaults:
        normalised |= {DEPRECATED_ROLES[r] for r in roles if r in DEPRECATED_ROLES}
    # Keystone role implication: admin ⊃ member ⊃ reader.
    if "admin" in normalised:
        normalised |= {"member", "reader", "global_observer", "quota_admin"}
    if "member" in normalised:
        normalised.add("reader")
    is_admin = "admin" in normalised
    return RequestContext(project, frozenset(normalised), is_admin, request_id)
