"""HTTP load for the data-plane benchmark: `wrk` when present, else a multi-process Python one.

``measure`` runs a fixed-duration closed-loop load (N connections, each sending its next
request as soon as the previous response is in) and returns requests/s, latency
percentiles and errors, with either ``wrk`` (Debian package ``wrk``) or, as a fall-back,
asyncio clients spread over several processes. Latency is measured from writing a request
to reading the whole response (connection set-up excluded, as wrk does); "close" mode sends
``Connection: close`` so every request uses a new connection.

``ContinuousClient`` is the client of the reconfiguration test: processes sending one
request after another without pause until told to stop, counting every failure by kind.
``probe`` is a single request on a new connection, used for polling a VIP.

Used by ``bench/dataplane.py``; not a library.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import multiprocessing.synchronize
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

_WRK_SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,' ..
    '"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


def request_bytes(keepalive: bool) -> bytes:
    connection = "keep-alive" if keepalive else "close"
    return f"GET / HTTP/1.1\r\nHost: bench\r\nConnection: {connection}\r\n\r\n".encode()


@dataclass
class LoadResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests_per_s": round(self.requests_per_s, 1),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "requests": self.requests,
            "errors": sum(self.errors.values()),
        }


@dataclass(frozen=True)
class Generator:
    """Which load generator runs, and how hard it pushes."""

    name: str
    connections: int
    threads_or_processes: int
    version: str = ""
    scheme: str = "http"  # "https" with wrk only

    def describe(self) -> dict[str, Any]:
        unit = "threads" if self.name == "wrk" else "processes"
        return {
            "name": self.name,
            "version": self.version,
            "connections": self.connections,
            unit: self.threads_or_processes,
            "model": "closed loop: each connection sends its next request on response",
        }

    def measure(self, host: str, port: int, seconds: float, keepalive: bool) -> LoadResult:
        if self.name == "wrk":
            return _wrk(
                f"{self.scheme}://{host}:{port}/",
                seconds,
                keepalive,
                self.connections,
                self.threads_or_processes,
            )
        if self.scheme != "http":
            raise RuntimeError("the Python load generator speaks plain HTTP only")
        return _python_load(
            host, port, seconds, keepalive, self.connections, self.threads_or_processes
        )


def choose_generator(
    wanted: str, connections: int, allow_install: bool, log: list[str]
) -> Generator:
    """``wrk`` if wanted and present (installing it with apt-get if root and allowed)."""
    if wanted in ("auto", "wrk"):
        if shutil.which("wrk") is None and allow_install and os.geteuid() == 0:
            log.append(_install_wrk())
        path = shutil.which("wrk")
        if path is not None:
            return Generator("wrk", connections, 1, _wrk_version(path))
        if wanted == "wrk":
            raise RuntimeError("wrk was asked for and is not installed")
        log.append("wrk not available: using the Python load generator")
    processes = max(1, min(2, os.cpu_count() or 1))
    return Generator("python-asyncio", max(connections, processes), processes)


def _install_wrk() -> str:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "wrk"]
    for argv in (install, ["apt-get", "update", "-qq"], install):
        if shutil.which("wrk") is not None:
            break
        try:
            subprocess.run(argv, env=env, capture_output=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"apt-get failed: {exc}"
    return "installed wrk with apt-get" if shutil.which("wrk") else "apt-get could not install wrk"


def _wrk_version(path: str) -> str:
    done = subprocess.run([path, "-v"], capture_output=True, text=True, check=False)
    words = (done.stdout + done.stderr).split()
    return words[1] if len(words) > 1 else "unknown"


def _wrk(
    url: str,
    seconds: float,
    keepalive: bool,
    connections: int,
    threads: int,
    prefix: tuple[str, ...] = (),
) -> LoadResult:
    """One wrk run; ``prefix`` runs it elsewhere (``ip netns exec NS`` for ``bench/l4.py``)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_WRK_SCRIPT)
    try:
        argv = [
            *prefix,
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "5s",
            "-s",
            script.name,
        ]
        if not keepalive:
            argv += ["-H", "Connection: close"]
        argv.append(url)
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=seconds + 60, check=False
        )
    finally:
        os.unlink(script.name)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout}{done.stderr}")
    raw = json.loads(lines[-1])
    errors = {k: int(raw[k]) for k in ("connect", "read", "write", "status", "timeout") if raw[k]}
    return LoadResult(
        requests=int(raw["requests"]),
        seconds=raw["duration_us"] / 1e6,
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        errors=errors,
    )


# --- the Python load generator --------------------------------------------------------------


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, server closes) of one HTTP/1.1 response with a Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = 0
    closes = False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection" and value.strip().lower() == "close":
            closes = True
    body = await reader.readexactly(length) if length else b""
    return status, body, closes


def _error_kind(exc: BaseException, reused: bool) -> str:
    if isinstance(exc, asyncio.IncompleteReadError) and not exc.partial:
        if reused:
            return "closed_before_response_on_reused_connection"
        return "closed_before_response"
    if isinstance(exc, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, ConnectionResetError):
        return "reset_on_reused_connection" if reused else "connection_reset"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return f"other_{type(exc).__name__}"


class _Stats:
    def __init__(self, keep_latencies: bool) -> None:
        self.ok = 0
        self.errors: Counter[str] = Counter()
        self.bodies: Counter[str] = Counter()
        self.latencies_us: list[int] = []
        self.keep_latencies = keep_latencies
        self.first_errors: list[tuple[float, str]] = []
        """(perf_counter time, kind) of the first failures; CLOCK_MONOTONIC, so comparable
        across processes on this host."""

    def note_error(self, kind: str) -> None:
        self.errors[kind] += 1
        if len(self.first_errors) < 200:
            self.first_errors.append((time.perf_counter(), kind))


async def _connection_loop(
    host: str, port: int, keepalive: bool, until: Any, stats: _Stats
) -> None:
    request = request_bytes(keepalive)
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    used = 0
    while not until():
        try:
            if writer is None:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
                used = 0
            assert reader is not None and writer is not None
            t0 = time.perf_counter()
            writer.write(request)
            status, body, closes = await asyncio.wait_for(_read_response(reader), 5)
            elapsed = time.perf_counter() - t0
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            kind = _error_kind(exc, used > 0)
            stats.note_error(kind)
            if writer is not None:
                writer.close()
            reader = writer = None
            continue
        used += 1
        if status == 200:
            stats.ok += 1
            if stats.keep_latencies:
                stats.latencies_us.append(int(elapsed * 1e6))
            stats.bodies[body.decode(errors="replace").strip()] += 1
        else:
            stats.note_error(f"status_{status}")
        if closes or not keepalive:
            assert writer is not None
            writer.close()
            reader = writer = None
    if writer is not None:
        writer.close()


def _run_loops(
    host: str, port: int, keepalive: bool, connections: int, until: Any, latencies: bool
) -> _Stats:
    stats = _Stats(keep_latencies=latencies)

    async def main() -> None:
        await asyncio.gather(
            *(_connection_loop(host, port, keepalive, until, stats) for _ in range(connections))
        )

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
    return stats


def _load_child(
    host: str, port: int, keepalive: bool, connections: int, seconds: float, out: Connection
) -> None:
    start = time.perf_counter()
    deadline = start + seconds
    stats = _run_loops(
        host, port, keepalive, connections, lambda: time.perf_counter() >= deadline, True
    )
    elapsed = time.perf_counter() - start
    out.send((stats.ok, dict(stats.errors), stats.latencies_us, elapsed))
    out.close()


def _python_load(
    host: str, port: int, seconds: float, keepalive: bool, connections: int, processes: int
) -> LoadResult:
    ctx = multiprocessing.get_context("fork")
    pipes = []
    children = []
    per_process = [
        connections // processes + (i < connections % processes) for i in range(processes)
    ]
    for share in per_process:
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(
            target=_load_child, args=(host, port, keepalive, share, seconds, send), daemon=True
        )
        child.start()
        send.close()
        pipes.append(receive)
        children.append(child)
    ok = 0
    errors: Counter[str] = Counter()
    latencies: list[int] = []
    elapsed = 0.0
    for receive in pipes:
        child_ok, child_errors, child_latencies, child_elapsed = receive.recv()
        ok += child_ok
        errors.update(child_errors)
        latencies.extend(child_latencies)
        elapsed = max(elapsed, child_elapsed)
    for child in children:
        child.join(10)
    return LoadResult(
        requests=ok + sum(errors.values()),
        seconds=elapsed,
        p50_ms=percentile(latencies, 0.50) / 1000,
        p99_ms=percentile(latencies, 0.99) / 1000,
        errors=dict(errors),
    )


def percentile(values: list[int] | list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))])


# --- the client of the reconfiguration test ---------------------------------------------------


def _continuous_child(
    host: str,
    port: int,
    keepalive: bool,
    connections: int,
    stop: multiprocessing.synchronize.Event,
    out: Connection,
) -> None:
    stats = _run_loops(host, port, keepalive, connections, stop.is_set, False)
    out.send((stats.ok, dict(stats.errors), dict(stats.bodies), stats.first_errors))
    out.close()


class ContinuousClient:
    """Processes sending requests without pause (keep-alive and new-connection) until stopped."""

    def __init__(self, host: str, port: int, connections_per_mode: int = 1) -> None:
        ctx = multiprocessing.get_context("fork")
        self._stop = ctx.Event()
        self._children: list[tuple[str, multiprocessing.process.BaseProcess, Connection]] = []
        self._send_ends: list[Connection] = []
        for mode in ("keepalive", "new_connection"):
            receive, send = ctx.Pipe(duplex=False)
            child = ctx.Process(
                target=_continuous_child,
                args=(host, port, mode == "keepalive", connections_per_mode, self._stop, send),
                daemon=True,
            )
            self._children.append((mode, child, receive))
            self._send_ends.append(send)
        self.started = 0.0
        self.error_times: list[float] = []
        """perf_counter times of the first failures of every client (after ``stop``)."""

    def start(self) -> None:
        self.started = time.perf_counter()
        for _, child, _ in self._children:
            child.start()
        for send in self._send_ends:
            send.close()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        seconds = time.perf_counter() - self.started
        result: dict[str, Any] = {"seconds": round(seconds, 2)}
        total_ok = 0
        total_errors: Counter[str] = Counter()
        for mode, child, receive in self._children:
            ok, errors, bodies, first_errors = receive.recv()
            child.join(10)
            total_ok += ok
            total_errors.update(errors)
            self.error_times.extend(t for t, _ in first_errors)
            result[mode] = {
                "requests": ok + sum(errors.values()),
                "errors": sum(errors.values()),
                "error_kinds": errors,
                "served_by": bodies,
                "first_errors_at_s": [
                    (round(t - self.started, 3), k) for t, k in first_errors[:20]
                ],
            }
        result["requests"] = total_ok + sum(total_errors.values())
        result["errors"] = sum(total_errors.values())
        result["error_kinds"] = dict(total_errors)
        return result


# --- single probes -----------------------------------------------------------------------------


def probe(host: str, port: int, timeout: float = 1.0) -> str | None:
    """The body of a 200 answer to one request on a new connection, or None."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(request_bytes(False))
            chunks = []
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError:
        return None
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
        return None
    return body.decode(errors="replace").strip()


def wait_until_served(
    host: str, port: int, accept: Any, timeout: float, burst: int = 1, interval: float = 0.001
) -> float | None:
    """Seconds (perf_counter) at which ``accept(body)`` first held, polling new connections.

    Each tick sends up to ``burst`` requests back to back (one per server of a round-robin
    pool covers every server) and then sleeps ``interval``.
    """
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for _ in range(burst):
            body = probe(host, port, timeout=1.0)
            if body is not None and accept(body):
                return time.perf_counter()
            if body is None:
                break
        time.sleep(interval)
    return None


def wrk_load(
    url: str, seconds: float, keepalive: bool, connections: int, threads: int,
    prefix: tuple[str, ...] = (),
) -> LoadResult:  # fmt: skip
    """One wrk run (public for ``bench/l4_c.py``): requests, duration, p50/p99, errors."""
    return _wrk(url, seconds, keepalive, connections, threads, prefix)


def wrk_version() -> str:
    return _wrk_version("wrk")
