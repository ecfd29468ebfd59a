"""Clients that send real traffic through a VIP, only ever to 127.0.0.0/8.

Every request opens a new connection (unless a ``http.cookiejar``-style cookie is passed
along by the caller), so HAProxy makes a balancing decision for each one. A client socket
can be bound to a chosen loopback source address, which is how a test connects "from"
127.0.0.2 without any network set-up.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.support.waiting import wait_until

TIMEOUT = 10.0


def _require_loopback(address: str) -> None:
    if not ipaddress.ip_address(address).is_loopback:
        raise AssertionError(f"tests send traffic only to 127.0.0.0/8, not to {address}")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    vip: str,
    port: int,
    path: str = "/",
    *,
    headers: dict[str, str] | None = None,
    source: str | None = None,
    method: str = "GET",
    timeout: float = TIMEOUT,
) -> Reply:
    """One HTTP/1.1 request on a new connection (from ``source`` if given)."""
    _require_loopback(vip)
    conn = http.client.HTTPConnection(
        vip, port, timeout=timeout, source_address=None if source is None else (source, 0)
    )
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        conn.close()


def served_by(vip: str, port: int, path: str = "/", **kwargs: Any) -> str:
    """The name of the backend that answered a GET (which must be a 200)."""
    reply = request(vip, port, path, **kwargs)
    if reply.status != 200:
        raise AssertionError(f"GET {path} answered {reply.status}: {reply.text[:200]}")
    return reply.text


def spread(vip: str, port: int, count: int, path: str = "/", **kwargs: Any) -> Counter[str]:
    """How many of ``count`` requests each backend answered."""
    return Counter(served_by(vip, port, path, **kwargs) for _ in range(count))


def answers(vip: str, port: int, path: str = "/") -> bool:
    """Whether the VIP answers 200 right now."""
    try:
        return request(vip, port, path, timeout=2).status == 200
    except (OSError, http.client.HTTPException):
        return False


def wait_serving(vip: str, port: int, timeout: float = 30.0, path: str = "/") -> None:
    wait_until(lambda: answers(vip, port, path), timeout, f"{vip}:{port} to answer 200")


def wait_for_backends(
    vip: str, port: int, names: set[str], timeout: float = 30.0, path: str = "/"
) -> None:
    """Wait until requests through the VIP have been answered by every backend in ``names``."""
    seen: set[str] = set()

    def all_seen() -> bool:
        try:
            reply = request(vip, port, path, timeout=2)
        except (OSError, http.client.HTTPException):
            return False
        if reply.status == 200:
            seen.add(reply.text)
        return names <= seen

    try:
        wait_until(all_seen, timeout, f"answers from each of {sorted(names)}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; answers seen only from {sorted(seen)}") from None


def tcp_exchange(
    vip: str, port: int, payload: bytes = b"hello\n", *, source: str | None = None
) -> bytes:
    """Connect, send ``payload``, read until the server closes; what it sent."""
    _require_loopback(vip)
    with socket.create_connection(
        (vip, port), timeout=TIMEOUT, source_address=None if source is None else (source, 0)
    ) as sock:
        sock.sendall(payload)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


@dataclass
class LoopingClient:
    """Sends GETs without pause from a thread; counts successes, failures and who answered."""

    vip: str
    port: int
    path: str = "/"
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    answered_by: Counter[str] = field(default_factory=Counter)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> LoopingClient:
        _require_loopback(self.vip)
        self._thread = threading.Thread(target=self._run, name="looping-client", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                reply = request(self.vip, self.port, self.path)
            except (OSError, http.client.HTTPException) as exc:
                self.failures.append(f"{time.monotonic():.3f} {type(exc).__name__}: {exc}")
                continue
            if reply.status == 200:
                self.ok += 1
                self.answered_by[reply.text] += 1
            else:
                self.failures.append(f"{time.monotonic():.3f} status {reply.status}")
