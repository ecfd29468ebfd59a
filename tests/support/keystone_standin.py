"""A stand-in for Keystone's token API, on 127.0.0.1, for the token-validation tests.

Not Keystone: it serves only the two calls lbaas makes -- ``POST /v3/auth/tokens`` (the
service user's password authentication, answered with X-Subject-Token and a token body)
and ``GET /v3/auth/tokens`` (X-Auth-Token: the service's token; X-Subject-Token: the one
to validate), with the body shape Keystone's v3 API documents (user, project with
domains, roles, methods, audit_ids, expires_at, catalog). Keystone itself needs its own
virtualenv, a database and fernet keys (issue 30, stage 4); this stand-in keeps the
tests in-process. It counts validations, so the tests can see the cache work.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVICE_USER, SERVICE_PASSWORD = "lbaas", "service-password-never-logged"
_DOMAIN = {"id": "default", "name": "Default"}
_FAR = "2099-01-01T00:00:00.000000Z"


def token_body(user: str, project: str | None, roles: list[str], expires: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "methods": ["password"],
        "user": {"id": f"uid-{user}", "name": user, "domain": _DOMAIN},
        "audit_ids": [secrets.token_urlsafe(8)],
        "expires_at": expires,
        "issued_at": "2024-01-01T00:00:00.000000Z",
        "roles": [{"id": f"rid-{r}", "name": r} for r in roles],
        "catalog": [],
    }
    if project is not None:
        body["project"] = {"id": project, "name": f"name-{project}", "domain": _DOMAIN}
        body["is_domain"] = False
    return {"token": body}


@dataclass
class KeystoneStandIn:
    url: str = ""
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    validations: int = 0
    #: True: token validation answers 500, as a Keystone whose database is gone.
    failing: bool = False
    service_token: str = field(default_factory=lambda: secrets.token_urlsafe(16))

    def issue(self, user: str, project: str | None, roles: list[str], expires: str = _FAR) -> str:
        token = secrets.token_urlsafe(24)
        self.tokens[token] = token_body(user, project, roles, expires)
        return token

    def revoke(self, token: str) -> None:
        self.tokens.pop(token, None)


def _handler(standin: KeystoneStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            return

        def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            user = sent["auth"]["identity"]["password"]["user"]
            if (user["name"], user["password"]) != (SERVICE_USER, SERVICE_PASSWORD):
                self._reply(401, {"error": {"code": 401, "title": "Unauthorized"}})
                return
            body = token_body(SERVICE_USER, "service", ["service", "admin"], _FAR)
            self._reply(201, body, {"X-Subject-Token": standin.service_token})

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.headers.get("X-Auth-Token") != standin.service_token:
                self._reply(401, {"error": {"code": 401, "title": "Unauthorized"}})
                return
            standin.validations += 1
            if standin.failing:
                self._reply(500, {"error": {"code": 500, "title": "Internal Server Error"}})
                return
            body = standin.tokens.get(self.headers.get("X-Subject-Token", ""))
            if body is None:
                self._reply(404, {"error": {"code": 404, "title": "Not Found"}})
                return
            self._reply(200, body, {"X-Subject-Token": self.headers["X-Subject-Token"]})

    return Handler


@contextmanager
def keystone_standin() -> Iterator[KeystoneStandIn]:
    standin = KeystoneStandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(standin))
    standin.url = f"http://127.0.0.1:{server.server_address[1]}/v3"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
