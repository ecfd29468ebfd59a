"""Helpers for the agent's end-to-end tests: backends, configurations, a looping client."""

from __future__ import annotations

import hashlib
import http.client
import random
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.model.graph import ListenerId, MemberId, PoolId
from lbaas.model.health import HealthReport
from lbaas.render.haproxy.names import backend_name, frontend_name, server_name
from lbaas.wire.amphora import SPEC_FORMAT, HaproxyFacts, ServerSetting
from tests.support.waiting import wait_until

LISTENER = ListenerId("0b6c1a52-6e1f-4b0e-9d68-3c1f1f4a7e01")
POOL = PoolId("7d0f5a7e-3f4c-4c55-9c2d-0f3e9b1f2a02")


def report_of(manager: AmphoraRegistry, amphora_id: str) -> HealthReport:
    """The amphora's health report. A read that misses one round's deadline (a busy host:
    reading UDP listeners goes through nft and conntrack) is delivered by a later round,
    as for the heartbeats, so ask again until it is there."""
    found: dict[str, HealthReport] = {}

    def reported() -> bool:
        found.update(manager.health_reports())
        return amphora_id in found

    wait_until(reported, what=f"{amphora_id}'s statistics")
    return found[amphora_id]


def random_loopback() -> str:
    """A random 127.x address, so parallel test runs on this host do not collide."""
    return f"127.{random.randint(100, 250)}.{random.randint(0, 255)}.{random.randint(2, 250)}"


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        if self.path.startswith("/slow"):
            time.sleep(float(self.path.rsplit("/", 1)[-1] or 2))
        body = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


class Backend:
    """A threaded HTTP server answering its own name, on 127.0.0.1."""

    def __init__(self, name: str, address: str = "127.0.0.1") -> None:
        self.server = ThreadingHTTPServer((address, 0), _Handler)
        self.server.daemon_threads = True
        self.server.name = name  # type: ignore[attr-defined]
        self.address, self.port = address, int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass(frozen=True)
class Server:
    member_id: str
    address: str
    port: int
    weight: int = 1


def haproxy_config(
    amphora_dir: Path,
    vip: str,
    port: int,
    servers: Sequence[Server],
    *,
    frontend_lines: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``AmphoraSpec`` fields of a configuration shaped like the renderer's, with facts.

    The text is written by hand for the tests; its ``fixed_digest`` is taken, as the
    renderer's is, from the same configuration with every server at weight 1.
    """
    text = _config_text(amphora_dir, vip, port, servers, frontend_lines)
    fixed = [Server(s.member_id, s.address, s.port) for s in servers]
    digest = hashlib.sha256(
        _config_text(amphora_dir, vip, port, fixed, frontend_lines).encode()
    ).hexdigest()
    facts = HaproxyFacts(
        runtime_socket=f"{amphora_dir}/stats.sock",
        server_state_file=f"{amphora_dir}/server-state",
        servers=tuple(
            ServerSetting(
                backend=backend_name(POOL),
                server=server_name(MemberId(s.member_id)),
                weight=s.weight,
                disabled=False,
            )
            for s in servers
        ),
        fixed_digest=f"sha256:{digest}",
    )
    return {"spec_format": SPEC_FORMAT, "haproxy_config": text, "haproxy_facts": facts}


def _config_text(
    amphora_dir: Path,
    vip: str,
    port: int,
    servers: Sequence[Server],
    frontend_lines: Sequence[str],
) -> str:
    lines = [
        "global",
        f'    stats socket "{amphora_dir}/stats.sock" mode 600 level admin expose-fd listeners',
        f'    server-state-file "{amphora_dir}/server-state"',
        "defaults",
        "    mode http",
        "    load-server-state-from-file global",
        "    timeout connect 5s",
        "    timeout client 50s",
        "    timeout server 50s",
        f"frontend {frontend_name(LISTENER)}",
        f"    bind {vip}:{port}",
        "    maxconn 1000",
        *(f"    {line}" for line in frontend_lines),
        f"    default_backend {backend_name(POOL)}",
        f"backend {backend_name(POOL)}",
        "    balance roundrobin",
        *(
            f"    server {server_name(MemberId(s.member_id))} {s.address}:{s.port} weight {s.weight}"
            for s in servers
        ),
    ]
    return "\n".join(lines) + "\n"


def http_get(address: str, port: int, path: str = "/", timeout: float = 10.0) -> str:
    conn = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode()
        if response.status != 200:
            raise AssertionError(f"status {response.status}: {body}")
        return body
    finally:
        conn.close()


class LoopingClient:
    """Requests in a loop, each on a new connection, counting successes and failures."""

    def __init__(self, address: str, port: int) -> None:
        self.address, self.port = address, port
        self.ok = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LoopingClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                http_get(self.address, self.port)
                self.ok += 1
            except (OSError, http.client.HTTPException, AssertionError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
