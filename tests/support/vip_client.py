"""Clients asking VIPs in a loop from the lab's namespaces, read per step (issue 35).

``VipClient``: one process in one namespace that starts a request every ``pause`` seconds,
to each of its VIPs in turn, each on a new connection in a thread of its own (a request
hanging on a dead VIP holds back no other). ``VipClients``: several of them read as one,
each VIP named with its provider, so that a step's failures and gaps can be told apart by
provider and by where the request left from (a distributed VIP is balanced on the client's
own node: a request from a host takes that host's rules, one from the client namespace
the entry node's).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

# One request every ``pause`` seconds, to each address in turn; one line per request:
# start, end (CLOCK_MONOTONIC, shared by every process), address, and the body or "".
_LOOP = r"""
import http.client, sys, threading, time, urllib.request
addresses = sys.argv[1].split(",")
timeout, pause, limit = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
lock = threading.Lock()
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no *_proxy variables
def one(address):
    started, body = time.monotonic(), ""
    try:  # urllib asks for "Connection: close": a new connection each time
        with direct.open(f"http://{address}:80/", timeout=timeout) as response:
            body = response.read().decode().strip() if response.status == 200 else ""
    except (OSError, ValueError, http.client.HTTPException):
        pass
    with lock:
        print(f"{started:.6f}\t{time.monotonic():.6f}\t{address}\t{body}", flush=True)
end = time.monotonic() + limit
next_at, turn = time.monotonic(), 0
while time.monotonic() < end:
    threading.Thread(target=one, args=(addresses[turn % len(addresses)],), daemon=True).start()
    turn += 1
    next_at += pause
    time.sleep(max(0.0, next_at - time.monotonic()))
"""


@dataclass(frozen=True)
class Request:
    started: float
    ended: float
    address: str
    answered: bool


#: The client's SCHED_FIFO priority with ``realtime``: above every normal process, below
#: the kernel's own real-time threads (which run at 50 and up).
REALTIME_PRIORITY = 10


@dataclass
class VipClient:
    """Requests to every VIP in turn from ``namespace``; ``requests`` fills as they end.
    Used as a context manager: the process is killed on leaving."""

    namespace: str
    addresses: list[str]
    pause: float = 0.01
    timeout: float = 0.5
    limit: float = 3600.0
    realtime: bool = False
    """Run the client at a real-time priority (``chrt -f``): a request then fails only
    when the data plane did not answer in time, not when the machine's scheduler kept
    the client itself from reading the answer."""
    requests: list[Request] = field(default_factory=list)
    _process: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None

    def __enter__(self) -> VipClient:
        argv = [sys.executable, "-c", _LOOP, ",".join(self.addresses)]
        argv += [str(self.timeout), str(self.pause), str(self.limit)]
        if self.realtime:
            argv = ["chrt", "--fifo", str(REALTIME_PRIORITY), *argv]
        self._process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *argv], stdout=subprocess.PIPE, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            started, ended, address, body = line.rstrip("\n").split("\t", 3)
            self.requests.append(Request(float(started), float(ended), address, bool(body)))

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()

    @property
    def cycle(self) -> float:
        """How often each VIP is asked when nothing fails: the shortest possible gap."""
        return self.pause * len(self.addresses)

    def _failed(self, start: float, end: float, only: Collection[str] | None) -> list[Request]:
        return sorted(
            (
                r
                for r in list(self.requests)
                if start <= r.started < end and not r.answered
                if only is None or r.address in only
            ),
            key=lambda r: r.started,
        )

    def failed(self, start: float, end: float, only: Collection[str] | None = None) -> int:
        """Requests started in [start, end) that were not answered (to ``only``'s VIPs)."""
        return len(self._failed(start, end, only))

    def failures(self, start: float, end: float, limit: int = 10) -> list[dict[str, Any]]:
        """The first ``limit`` failed requests started in [start, end): when (from
        ``start``), to which VIP, from where, how long they took."""
        wall = time.time() - time.monotonic()  # CLOCK_MONOTONIC to the logs' wall clock
        return [
            {
                "at_s": round(r.started - start, 3),
                "at": _clock(r.started + wall),
                "vip": r.address,
                "from": self.namespace,
                "took_s": round(r.ended - r.started, 3),
            }
            for r in self._failed(start, end, None)[:limit]
        ]

    def longest_gap(self, start: float, end: float, only: Collection[str] | None = None) -> float:
        """The longest time any VIP (of ``only``) went without an answered request around
        [start, end): between the starts of two answered requests, with the last before
        ``start`` and the first after ``end``."""
        longest = 0.0
        for address in self.addresses:
            if only is not None and address not in only:
                continue
            answered = sorted(
                r.started for r in list(self.requests) if r.address == address and r.answered
            )
            before = [t for t in answered if t < start][-1:]
            after = [t for t in answered if t >= end][:1]
            times = before + [t for t in answered if start <= t < end] + after
            gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
            longest = max([longest, *gaps])
        return longest

    def wait_answered(self, timeout: float = 60.0) -> None:
        """Until every VIP has answered since this call (the client is up)."""
        since = time.monotonic()
        deadline = since + timeout
        while time.monotonic() < deadline:
            seen = {r.address for r in list(self.requests) if r.started >= since and r.answered}
            if seen >= set(self.addresses):
                return
            time.sleep(0.1)
        missing = sorted(set(self.addresses) - seen)
        raise AssertionError(
            f"not every VIP answered {self.namespace} within {timeout:.0f}s: {missing}"
        )


def _clock(wall: float) -> str:
    """HH:MM:SS.mmm (UTC), as the lab's logs write time."""
    return time.strftime("%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d}"


@dataclass
class VipClients:
    """Several ``VipClient`` read as one; ``providers``: each VIP's provider (every VIP a
    client asks is named). Used as a context manager: every client is stopped on leaving."""

    clients: list[VipClient]
    providers: Mapping[str, str]
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __enter__(self) -> VipClients:
        with contextlib.ExitStack() as stack:
            for client in self.clients:
                stack.enter_context(client)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _of(self, provider: str) -> set[str]:
        return {a for a, p in self.providers.items() if p == provider}

    @property
    def cycle(self) -> float:
        return max(c.cycle for c in self.clients)

    @property
    def requests(self) -> int:
        return sum(len(c.requests) for c in self.clients)

    def requests_by_provider(self) -> dict[str, int]:
        every = [self.providers.get(r.address) for c in self.clients for r in list(c.requests)]
        return {p: every.count(p) for p in self.named()}

    def named(self) -> list[str]:
        """The providers, sorted."""
        return sorted(set(self.providers.values()))

    def failed(self, start: float, end: float) -> int:
        return sum(c.failed(start, end) for c in self.clients)

    def failed_by_provider(self, start: float, end: float) -> dict[str, int]:
        return {
            p: sum(c.failed(start, end, self._of(p)) for c in self.clients) for p in self.named()
        }

    def failed_by_route(self, start: float, end: float) -> dict[str, int]:
        """Failed requests per client namespace and VIP ("<namespace> > <VIP>"), those
        with any."""
        counts: dict[str, int] = {}
        for client in self.clients:
            for vip in client.addresses:
                failed = client.failed(start, end, {vip})
                if failed:
                    counts[f"{client.namespace} > {vip}"] = failed
        return counts

    def failures(self, start: float, end: float, limit: int = 10) -> list[dict[str, Any]]:
        every = [f for c in self.clients for f in c.failures(start, end, limit)]
        return sorted(every, key=lambda f: float(f["at_s"]))[:limit]

    def longest_gap(self, start: float, end: float) -> float:
        return max(c.longest_gap(start, end) for c in self.clients)

    def longest_gap_by_provider(self, start: float, end: float) -> dict[str, float]:
        return {
            p: max(c.longest_gap(start, end, self._of(p)) for c in self.clients)
            for p in self.named()
        }

    def wait_answered(self, timeout: float = 60.0) -> None:
        for client in self.clients:
            client.wait_answered(timeout)
