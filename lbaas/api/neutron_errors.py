"""Neutron's error body for lbaas's Networking-shaped API (``/v2.0/ports``, ...).

The stock openstack CLI, openstacksdk and Horizon's neutronclient talk to those routes as
to Neutron, whose errors are ``{"NeutronError": {"type", "message", "detail"}}``: ``type``
names the condition (neutronclient picks its exception class by it, falling back to the
status), ``message`` is what users are shown, ``detail`` is empty. The Octavia routes keep
Octavia's ``faultstring`` body (``lbaas.api.errors``).

Which requests are Networking requests is decided by path, so refusals before routing
(``request_guard``) and paths no route serves agree with the routes: everything under
``/v2.0``, and under ``/v2`` the collections of the routers tagged ``networking`` (the
stock CLI discovers ``v2`` from lbaas's root and asks the Networking API there too).
``tests/unit/api/test_neutron_errors.py`` checks the collections against the routers.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

#: The first path segment of every Networking route (after its ``/v2.0`` or ``/v2``).
NETWORKING_COLLECTIONS = frozenset(
    {
        "extensions",
        "floatingips",
        "networks",
        "ports",
        "security-group-rules",
        "security-groups",
        "subnets",
    }
)
#: ``type`` when the error names no condition of its own: the HTTP error Neutron's WSGI
#: layer raises for that status (webob's class names).
GENERIC_TYPES = {
    400: "HTTPBadRequest",
    401: "HTTPUnauthorized",
    403: "HTTPForbidden",
    404: "HTTPNotFound",
    405: "HTTPMethodNotAllowed",
    409: "HTTPConflict",
    413: "HTTPRequestEntityTooLarge",
    415: "HTTPUnsupportedMediaType",
    500: "HTTPInternalServerError",
    503: "HTTPServiceUnavailable",
}


def is_networking_path(path: str) -> bool:
    """Whether ``path`` is the Networking API's (answered with Neutron's error body)."""
    parts = path.strip("/").split("/")
    if parts[0] == "v2.0":  # Octavia's own /v2.0/lbaas aliases are rewritten by ``edge``
        return len(parts) == 1 or parts[1] not in ("lbaas", "octavia")
    return parts[0] == "v2" and len(parts) > 1 and parts[1] in NETWORKING_COLLECTIONS


def neutron_body(status: int, message: str, kind: str | None = None) -> dict[str, Any]:
    """Neutron's error body; ``kind`` is Neutron's name of the condition, if it has one."""
    name = kind or GENERIC_TYPES.get(status, "HTTPBadRequest" if status < 500 else "HTTPError")
    return {"NeutronError": {"type": name, "message": message, "detail": ""}}


def neutron_fault(status: int, message: str, kind: str | None = None) -> JSONResponse:
    return JSONResponse(neutron_body(status, message, kind), status_code=status)


#: The body's JSON schema, for the OpenAPI document.
NEUTRON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["NeutronError"],
    "properties": {
        "NeutronError": {
            "type": "object",
            "required": ["type", "message", "detail"],
            "properties": {
                "type": {"type": "string"},
                "message": {"type": "string"},
                "detail": {"type": "string"},
            },
        }
    },
}
