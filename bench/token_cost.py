"""What Keystone token validation costs each request once the token is cached.

Two ``lbaas serve`` (noop provider), one with ``auth_strategy = noauth`` (the caller in
X-Project-Id / X-Roles) and one with ``auth_strategy = keystone`` against a real Keystone
(tests/support/keystone_server.py: keystone from the OpenStack environment, fernet
tokens, uwsgi). The same project lists its one load balancer on both, in alternating
rounds so that the machine's load drifts over both alike. After a warm-up the token is
in lbaas's cache, so what is measured is the middleware's own work (hashing the token,
the cache lookup, replacing the identity headers), not Keystone. Figures: latency p50
and p95 per request, and the server's CPU per request, for each, and the keystone run's
overhead in percent. Used by ``bench/control_plane.py --keystone``.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.keystone_server import keystone_server

Start = Callable[[Path, dict[str, str]], tuple[subprocess.Popen[bytes], str]]
LB = "/v2/lbaas/loadbalancers"
SUBNET = "7f000a00-0000-4000-8000-000000000001"


def _cpu_seconds(pid: int) -> float:
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _round(client: httpx.Client, pid: int, n: int) -> tuple[list[float], float]:
    """``n`` sequential lists; their latencies and the server's CPU seconds."""
    times = []
    cpu = _cpu_seconds(pid)
    for _ in range(n):
        start = time.perf_counter()
        client.get(LB).raise_for_status()
        times.append(time.perf_counter() - start)
    return times, _cpu_seconds(pid) - cpu


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000, 3)


def token_validation_cost(start: Start, tmp: Path, requests: int, rounds: int) -> dict[str, Any]:
    with keystone_server() as keystone:
        service, service_password = keystone.service_user("lbaas-bench")
        keystone.user("bench-member", "bench-password", "bench", ("member", "reader"))
        token = keystone.token("bench-member", "bench-password", "bench")
        project = keystone.project("bench")
        settings = {
            "LBAAS_API__AUTH_STRATEGY": "keystone",
            "LBAAS_KEYSTONE_AUTHTOKEN__AUTH_URL": keystone.url,
            "LBAAS_KEYSTONE_AUTHTOKEN__USERNAME": service,
            "LBAAS_KEYSTONE_AUTHTOKEN__PASSWORD": service_password,
            "LBAAS_KEYSTONE_AUTHTOKEN__PROJECT_NAME": "service",
        }
        servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        try:
            servers["noauth"] = start(tmp / "noauth", {})
            servers["keystone"] = start(tmp / "ks", settings)
            return _measure(servers, project, token, requests, rounds)
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(20)


def _measure(
    servers: dict[str, tuple[subprocess.Popen[bytes], str]],
    project: str,
    token: str,
    requests: int,
    rounds: int,
) -> dict[str, Any]:
    headers = {
        "noauth": {"X-Project-Id": project, "X-Roles": "member,reader"},
        "keystone": {"X-Auth-Token": token},
    }
    clients = {
        mode: httpx.Client(base_url=url, headers=headers[mode], timeout=30)
        for mode, (_, url) in servers.items()
    }
    for client in clients.values():
        body = {"loadbalancer": {"name": "one", "vip_subnet_id": SUBNET}}
        client.post(LB, json=body).raise_for_status()
        for _ in range(50):  # warm: imports, the token cache, the database pages
            client.get(LB).raise_for_status()
    times: dict[str, list[float]] = {mode: [] for mode in servers}
    cpu = dict.fromkeys(servers, 0.0)
    for _ in range(rounds):
        for mode, client in clients.items():
            got, spent = _round(client, servers[mode][0].pid, requests)
            times[mode] += got
            cpu[mode] += spent
    return _figures(times, cpu)


def _figures(times: dict[str, list[float]], cpu: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, values in times.items():
        out[mode] = {
            "p50_ms": _pct(values, 0.5),
            "p95_ms": _pct(values, 0.95),
            "server_cpu_ms_per_request": round(cpu[mode] * 1000 / len(values), 3),
            "n": len(values),
        }
    for key in ("p50_ms", "server_cpu_ms_per_request"):
        base, with_tokens = out["noauth"][key], out["keystone"][key]
        out[f"overhead_pct_{key}"] = round((with_tokens - base) * 100 / base, 1) if base else None
    return out
