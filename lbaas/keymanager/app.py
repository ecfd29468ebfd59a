"""The key manager's ASGI app and the dispatcher that serves it beside the Octavia API.

It is served under ``/key-manager`` on the API's own port rather than on a port of its
own: one process, one listener, one TLS front and one identity middleware for both APIs,
and nothing else to start, supervise or open in a firewall. A Keystone catalog lists it as
service type ``key-manager`` at ``http://<api>/key-manager``; without a catalog
(``--os-auth-type none``) the client is pointed at
``--os-endpoint http://<api>/key-manager/v1``. It is a separate FastAPI app, not routers
of the Octavia app, because Barbican's conventions differ from Octavia's: its error body
(``code``/``title``/``description``), payloads that are not JSON (the Octavia edge refuses
a non-JSON ``Accept`` with 406), and its own version document.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from lbaas.api.request_guard import RequestGuard
from lbaas.api.services import ApiServices
from lbaas.keymanager import containers, errors, secrets

PREFIX = "/key-manager"
# Microversion 1.1 brings secret consumers; 1.2 (consumer-aware delete) is not served.
MIN_VERSION, MAX_VERSION = "1.0", "1.1"


def _version(base: str) -> dict[str, Any]:
    return {
        "id": "v1",
        "status": "CURRENT",
        "min_version": MIN_VERSION,
        "max_version": MAX_VERSION,
        "links": [{"rel": "self", "href": f"{base}/v1/"}],
        "media-types": [
            {"base": "application/json", "type": "application/vnd.openstack.key-manager-v1+json"}
        ],
    }


def create_key_manager_app(services: ApiServices) -> FastAPI:
    app = FastAPI(title="lbaas key manager", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = services
    errors.install(app)

    def base_of(request: Request) -> str:
        return (services.settings.keymanager.host_href or str(request.base_url)).rstrip("/")

    @app.get("/")
    def versions(request: Request) -> dict[str, Any]:
        return {"versions": {"values": [_version(base_of(request))]}}

    @app.get("/v1")
    @app.get("/v1/")
    def version_v1(request: Request) -> dict[str, Any]:
        return {"version": _version(base_of(request))}

    app.include_router(secrets.router)
    app.include_router(containers.router)
    return app


class KeyManagerMount:
    """Requests under ``/key-manager`` go to the key manager, the rest to the Octavia API."""

    def __init__(self, api: ASGIApp, key_manager: ASGIApp, max_body_bytes: int) -> None:
        self.api = api
        self.key_manager = RequestGuard(key_manager, max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http":
            path = scope["path"] = _key_manager_path(scope) or path
        if scope["type"] == "http" and (path == PREFIX or path.startswith(PREFIX + "/")):
            scope = {**scope, "root_path": scope.get("root_path", "") + PREFIX}
            await self.key_manager(scope, receive, send)
            return
        await self.api(scope, receive, send)


#: Paths the stock Barbican client requests relative to a bare endpoint, and where they are.
_BARE_PATHS = (("/secrets", PREFIX + "/v1/secrets"), ("/containers", PREFIX + "/v1/containers"))


def _key_manager_path(scope: Scope) -> str | None:
    """Where a request the stock ``openstack secret`` client sent to the API's bare address
    belongs under ``/key-manager``; None for every other request.

    Given only the API's address (the quick start's ``OS_ENDPOINT``), barbicanclient reads
    ``/`` for its versions and then sends ``/secrets…`` and ``/containers…`` there. It names
    a key-manager microversion on every request (``OpenStack-API-Version: key-manager 1.1``),
    which no Octavia client sends, so that header alone routes them; the hrefs it gets back
    are the key manager's own, under ``/key-manager/v1``.
    """
    if not any(
        name == b"openstack-api-version" and value.strip().lower().startswith(b"key-manager")
        for name, value in scope.get("headers", ())
    ):
        return None
    path: str = scope.get("path", "")
    if path == "/":
        return PREFIX + "/"
    for bare, mounted in _BARE_PATHS:
        if path == bare or path.startswith(bare + "/"):
            return mounted + path[len(bare) :]
    return None


def with_key_manager(services: ApiServices, api: ASGIApp) -> ASGIApp:
    if services.vault is None or not services.settings.keymanager.enabled:
        return api
    km = create_key_manager_app(services)
    return KeyManagerMount(api, km, services.settings.api.max_body_bytes)
