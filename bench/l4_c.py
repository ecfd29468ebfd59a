"""C tools for ``bench/l4.py``'s VIP-vs-direct comparison: HAProxy backends and wrk.

One Python client and Python servers on two shared cores cost 50-200 us a request, so
the kernel's few microseconds on the VIP path (jhash, map lookup, a NAT binding per new
flow) hid in their noise. Here the backend is an HAProxy answering ``200 ok`` itself
(``http-request return``, no upstream) and the client is wrk, both C.

Used by ``bench/l4.py`` (and its smoke test); not a library.
"""

from __future__ import annotations

import shutil
import socket
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dataplane_loadgen import wrk_load, wrk_version

# wrk's shape: 2 threads (the machine's cores), 16 connections (enough to keep the
# backend busy without queueing most of the p99 in wrk's own event loop).
WRK_THREADS = 2
WRK_CONNECTIONS = 16


def have_c_tools(which: Callable[[str], str | None] = shutil.which) -> bool:
    """wrk and HAProxy both installed (else ``bench/l4.py`` falls back to Python)."""
    return which("wrk") is not None and which("haproxy") is not None


def backend_config(address: str, port: int) -> str:
    """An HAProxy that answers every HTTP request itself: a C backend with no upstream."""
    return "\n".join([
        "global",
        "    maxconn 4000",
        "    nbthread 1",
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 10s",
        "    timeout server 10s",
        "frontend ok",
        f"    bind {address}:{port}",
        "    http-request return status 200 content-type text/plain string ok",
        "",
    ])  # fmt: skip


def write_backend_config(directory: Path, name: str, address: str, port: int) -> Path:
    """Write and check (``haproxy -c``) one backend's configuration; its path."""
    path = directory / f"{name}-haproxy.cfg"
    path.write_text(backend_config(address, port))
    subprocess.run(["haproxy", "-c", "-q", "-f", str(path)], check=True, capture_output=True)
    return path


def backend_argv(config: Path) -> list[str]:
    # -db: stay in the foreground, so the caller's process group holds it and stops it.
    return ["haproxy", "-db", "-f", str(config)]


def wait_listening(prefix: tuple[str, ...], address: str, port: int, seconds: float = 20) -> None:
    """Until ``address:port`` accepts a connection, seen from where ``prefix`` runs."""
    probe = f"import socket; socket.create_connection(({address!r}, {port}), timeout=1).close()"
    deadline = time.monotonic() + seconds
    while True:
        done = subprocess.run([*prefix, "python3", "-c", probe], capture_output=True, check=False)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{address}:{port} not listening: {done.stderr!r}")
        time.sleep(0.2)


def wait_listening_here(address: str, port: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wrk_run(
    prefix: tuple[str, ...], address: str, port: int, seconds: float, keepalive: bool
) -> dict[str, float]:
    """One wrk run from where ``prefix`` runs: requests/s, p99 (ms) and errors."""
    result = wrk_load(f"http://{address}:{port}/", seconds, keepalive, WRK_CONNECTIONS,
                      WRK_THREADS, prefix)  # fmt: skip
    return {
        "per_s": round(result.requests_per_s, 1),
        "p99_ms": round(result.p99_ms, 3),
        "errors": float(sum(result.errors.values())),
    }


def summarize(samples: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Medians per run name (``<mode>_<path>``), and VIP/direct ratios per mode (for the
    VIP over both members, ``vip``, and over the direct backend alone, ``vip_one_member``).

    Besides the ratio of medians, the median of each round's own VIP/direct ratio: rounds
    are interleaved, so a round's pair shares the machine's load of that moment.
    """
    figures: dict[str, Any] = {}
    for name, values in samples.items():
        figures[f"{name}_per_s"] = round(statistics.median(v["per_s"] for v in values))
        figures[f"{name}_p99_ms"] = round(statistics.median(v["p99_ms"] for v in values), 3)
        figures[f"{name}_errors"] = int(sum(v.get("errors", 0) for v in values))
    modes = sorted({name.rsplit("_", 1)[0] for name in samples if name.endswith("_direct")})
    for mode in modes:
        direct = samples[f"{mode}_direct"]
        for path in ("vip", "vip_one_member"):
            vip = samples.get(f"{mode}_{path}")
            if not vip:
                continue
            key = f"{mode}_{path}_over_direct"
            figures[key] = round(
                figures[f"{mode}_{path}_per_s"] / max(figures[f"{mode}_direct_per_s"], 1), 3
            )
            paired = [
                v["per_s"] / d["per_s"] for v, d in zip(vip, direct, strict=True) if d["per_s"]
            ]
            if paired:
                figures[f"{key}_paired_median"] = round(statistics.median(paired), 3)
                figures[f"{key}_paired"] = [round(r, 3) for r in paired]
    return figures


def describe() -> dict[str, str]:
    version = subprocess.run(["haproxy", "-v"], capture_output=True, text=True, check=False)
    return {
        "tcp_client": f"wrk {wrk_version()} -t{WRK_THREADS} -c{WRK_CONNECTIONS}",
        "tcp_backend": version.stdout.split("\n", 1)[0][:40] + " (http-request return 200)",
    }
