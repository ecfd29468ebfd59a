"""Every request carries a Keystone token (``api.auth_strategy = "keystone"``).

An ASGI middleware in front of everything lbaas serves over HTTP (the Octavia API, the
key manager, the Networking-shaped reads, the dashboard's data and writes): it reads
``X-Auth-Token`` (and ``X-Service-Token``), has Keystone validate them through a cache
(``token_cache``; the blocking call runs in a worker thread), removes every identity
header the client sent, and sets the ones keystonemiddleware sets from what Keystone
said -- so the request context reads the same headers under every strategy. A missing,
invalid, expired or revoked token gets 401 in Octavia's error body with
``WWW-Authenticate: Keystone uri="..."``; Keystone unreachable gets 503.

Left open, as in Octavia and Barbican: the version documents, /healthcheck and /metrics
(their own switches), the metadata proxy's routes (signed by the agents' shared secret)
the dashboard's page and script (its data and writes need the token), and its login
route (which asks Keystone for the token).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from lbaas.config import KeystoneAuthtokenSettings
from lbaas.identity.keystone_tokens import KeystoneUnavailable, TokenIdentity, TokenRefused
from lbaas.identity.token_cache import TokenCache

OPEN_PATHS = frozenset(
    {"/", "/v2", "/v2.0", "/v2/lbaas", "/v2.0/lbaas", "/v2/octavia", "/v2.0/octavia"}
    | {"/key-manager", "/key-manager/", "/key-manager/v1", "/healthcheck", "/metrics"}
    | {"/dashboard", "/dashboard/login", "/openstack/latest/meta_data.json"}
)
OPEN_PREFIXES = ("/dashboard/static/", "/latest/meta-data/")
# What a client may not say about itself: removed before the validated identity is set.
_IDENTITY_HEADERS: tuple[bytes, ...] = (
    *(b"x-identity-status", b"x-service-", b"x-project", b"x-tenant", b"x-user"),
    *(b"x-domain", b"x-role", b"openstack-system-scope", b"x-auth-token"),
    *(b"x-is-admin-project", b"x-trust"),
)
UNAUTHORIZED = "The request you have made requires authentication."
UNAVAILABLE = "The Keystone service is temporarily unavailable."

Validate = Callable[[str], TokenIdentity]
_Answer = TokenIdentity | TokenRefused


def _identity_headers(who: TokenIdentity, prefix: str) -> list[tuple[bytes, bytes]]:
    values = {
        "identity-status": "Confirmed",
        "user-id": who.user_id,
        "user-name": who.user_name,
        "project-id": who.project_id,
        "project-name": who.project_name,
        "roles": ",".join(who.roles),
    }
    out = [(f"x-{prefix}{k}".encode(), v.encode()) for k, v in values.items() if v is not None]
    if who.system_scope is not None and not prefix:
        out.append((b"openstack-system-scope", who.system_scope.encode()))
    return out


class KeystoneTokenMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        validate: Validate,
        settings: KeystoneAuthtokenSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app, self._validate = app, validate
        self._cache: TokenCache[_Answer] = TokenCache(
            settings.token_cache_time, settings.token_cache_size, clock
        )
        uri = settings.www_authenticate_uri or settings.auth_url
        self._challenge = f'Keystone uri="{uri}"'.encode()
        self._service_roles = frozenset(r.lower() for r in settings.service_token_roles)
        self._service_roles_required = settings.service_token_roles_required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers", ()))
        try:
            added = await self._callers(sent.get(b"x-auth-token"), sent.get(b"x-service-token"))
        except TokenRefused:
            await self._fault(send, 401, UNAUTHORIZED)
            return
        except KeystoneUnavailable:
            await self._fault(send, 503, UNAVAILABLE)
            return
        kept = [(k, v) for k, v in scope["headers"] if not k.startswith(_IDENTITY_HEADERS)]
        await self.app({**scope, "headers": kept + added}, receive, send)

    async def _callers(
        self, token: bytes | None, service_token: bytes | None
    ) -> list[tuple[bytes, bytes]]:
        if not token:
            raise TokenRefused()
        user = await self._answer(token.decode("latin-1"))
        headers = _identity_headers(user, "")
        if service_token:
            service = await self._answer(service_token.decode("latin-1"))
            if self._service_roles.isdisjoint(r.lower() for r in service.roles):
                if self._service_roles_required:
                    raise TokenRefused()
                return headers
            headers += _identity_headers(service, "service-")
        return headers

    async def _answer(self, token: str) -> TokenIdentity:
        answer = self._cache.get(token)
        if answer is None:
            try:
                answer = await anyio.to_thread.run_sync(self._validate, token)
            except TokenRefused as refused:
                answer = refused
            expires = answer.expires if isinstance(answer, TokenIdentity) else None
            self._cache.put(token, answer, expires)
        if isinstance(answer, TokenRefused):
            raise TokenRefused()
        return answer

    async def _fault(self, send: Send, status: int, message: str) -> None:
        body = {"faultcode": "Client" if status < 500 else "Server", "faultstring": message}
        payload = json.dumps({**body, "debuginfo": None}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            (b"x-openstack-request-id", f"req-{uuid.uuid4()}".encode()),
        ]
        if status == 401:
            headers.append((b"www-authenticate", self._challenge))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
