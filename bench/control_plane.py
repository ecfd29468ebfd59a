"""Control-plane benchmark: prints JSON figures for `lbaas serve` with the noop provider.

    python bench/control_plane.py [--quick] [--database-url URL] [--keystone]

Measures, against a fresh `lbaas serve` process on a free loopback port:
POST latency (p50/p95); POST→ACTIVE for one load balancer and for a full tree (load
balancer, listener, pool, two members, health monitor — built call by call, each waiting
for ACTIVE as a client must, and as one fully-populated POST); list throughput with 200
and 1000 load balancers; 50 load balancers created by 10 threads (time until all ACTIVE,
errors); a batch member PUT of 1000 members, then of 1000 that replace half of them.
Figures go to stdout; nothing here asserts on time.

``--keystone`` is the Keystone-on run instead: the cost per request of token validation
with a warm cache, against noauth (``bench/token_cost.py``; needs the OpenStack
environment, ``.venv-openstack`` or LBAAS_OPENSTACK_VENV).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUBNET = "7f000a00-0000-4000-8000-000000000001"
LB = "/v2/lbaas/loadbalancers"
LBS = "loadbalancers"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index] * 1000, 2)


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": _pct(values, 0.5), "p95_ms": _pct(values, 0.95), "n": len(values)}


class Client:
    def __init__(self, url: str, project: str | None = None) -> None:
        # noauth reads the caller from Keystone's headers; a member of its own project
        # sees only that project's load balancers.
        headers = {"X-Project-Id": project, "X-Roles": "member"} if project else {}
        self.http = httpx.Client(base_url=url, timeout=30, headers=headers)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = self.http.post(path, json=body)
        r.raise_for_status()
        return dict(r.json())

    def wait_active(self, lb_id: str, poll: float = 0.002) -> None:
        while True:
            r = self.http.get(f"{LB}/{lb_id}")
            status = r.json()["loadbalancer"]["provisioning_status"]
            if status == "ACTIVE":
                return
            if status == "ERROR":
                raise RuntimeError(f"{lb_id} went to ERROR")
            time.sleep(poll)

    def create_lb(self, name: str) -> str:
        body = {"loadbalancer": {"name": name, "vip_subnet_id": SUBNET}}
        return str(self.post(LB, body)["loadbalancer"]["id"])

    def delete_all(self) -> None:
        for lb in self.http.get(LB).json()["loadbalancers"]:
            self.http.delete(f"{LB}/{lb['id']}", params={"cascade": "true"})


def post_latency(c: Client, n: int) -> dict[str, float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        c.create_lb(f"post-{i}")
        times.append(time.perf_counter() - start)
    return _summary(times)


def post_to_active(c: Client, n: int) -> dict[str, float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        c.wait_active(c.create_lb(f"active-{i}"))
        times.append(time.perf_counter() - start)
    return _summary(times)


def _tree_step(c: Client, lb_id: str, path: str, wrapper: str, body: dict[str, Any]) -> str:
    obj = c.post(path, {wrapper: body})[wrapper]
    c.wait_active(lb_id)
    return str(obj["id"])


def _http_listener_and_pool(c: Client, lb_id: str) -> str:
    """An HTTP listener and its default pool, one call each; the pool's id."""
    listener = _tree_step(
        c,
        lb_id,
        "/v2/lbaas/listeners",
        "listener",
        {"loadbalancer_id": lb_id, "protocol": "HTTP", "protocol_port": 80},
    )
    return _tree_step(
        c,
        lb_id,
        "/v2/lbaas/pools",
        "pool",
        {"listener_id": listener, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"},
    )


def full_tree_stepwise(c: Client, n: int) -> dict[str, float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        lb_id = c.create_lb(f"tree-{i}")
        c.wait_active(lb_id)
        pool = _http_listener_and_pool(c, lb_id)
        for m in range(2):
            _tree_step(
                c,
                lb_id,
                f"/v2/lbaas/pools/{pool}/members",
                "member",
                {"address": f"192.0.2.{10 + m}", "protocol_port": 80},
            )
        _tree_step(
            c,
            lb_id,
            "/v2/lbaas/healthmonitors",
            "healthmonitor",
            {"pool_id": pool, "type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3},
        )
        times.append(time.perf_counter() - start)
    return _summary(times)


def full_tree_single_call(c: Client, n: int) -> dict[str, float]:
    times = []
    for i in range(n):
        body = {
            "loadbalancer": {
                "name": f"graph-{i}",
                "vip_subnet_id": SUBNET,
                "listeners": [
                    {
                        "protocol": "HTTP",
                        "protocol_port": 80,
                        "default_pool": {
                            "name": "p",
                            "protocol": "HTTP",
                            "lb_algorithm": "ROUND_ROBIN",
                            "members": [
                                {"address": "192.0.2.10", "protocol_port": 80},
                                {"address": "192.0.2.11", "protocol_port": 80},
                            ],
                            "healthmonitor": {
                                "type": "HTTP",
                                "delay": 5,
                                "timeout": 3,
                                "max_retries": 3,
                            },
                        },
                    }
                ],
            }
        }
        start = time.perf_counter()
        lb_id = c.post(LB, body)["loadbalancer"]["id"]
        c.wait_active(lb_id)
        times.append(time.perf_counter() - start)
    return _summary(times)


def batch_members(c: Client, size: int) -> dict[str, float]:
    """The batch member PUT (what a controller syncing endpoints sends): ``size`` members
    replacing none, then ``size`` replacing half of them; time to 202 and to ACTIVE."""
    lb_id = c.create_lb("batch")
    c.wait_active(lb_id)
    pool = _http_listener_and_pool(c, lb_id)
    figures: dict[str, float] = {"members": size}
    for name, offset in (("create", 0), ("replace_half", size // 2)):
        members = [
            {"address": f"10.{(i + offset) // 250}.{(i + offset) % 250}.1", "protocol_port": 80}
            for i in range(size)
        ]
        start = time.perf_counter()
        c.http.put(f"/v2/lbaas/pools/{pool}/members", json={"members": members}).raise_for_status()
        figures[f"{name}_put_ms"] = round((time.perf_counter() - start) * 1000, 1)
        c.wait_active(lb_id, poll=0.01)
        figures[f"{name}_active_ms"] = round((time.perf_counter() - start) * 1000, 1)
    return figures


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _list_loop(c: Client, total: int, seconds: float) -> int:
    """List as fast as possible for ``seconds``; how many full pages were answered."""
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        r = c.http.get(LB)
        # orjson: the load generator should not be the bottleneck it measures.
        assert len(orjson.loads(r.content)["loadbalancers"]) == total
        count += 1
    return count


def list_throughput(
    url: str, server_pid: int, total: int, seconds: float, clients: int = 4
) -> dict[str, float]:
    """A tenant with exactly ``total`` load balancers lists them, as fast as it can.

    Throughput is measured with ``clients`` concurrent clients, so the clients' own
    parsing overlaps the server's work as with any real load; one client alone adds its
    parsing time to every request and is reported separately. Server CPU per request
    shows what the server itself spends.
    """
    project = f"bench-list-{total}"
    c = Client(url, project=project)
    existing = len(c.http.get(LB).json()["loadbalancers"])
    for i in range(existing, total):
        c.create_lb(f"list-{i}")
    # Measure listing alone, not listing while 200 converges still run.
    while any(lb["provisioning_status"] != "ACTIVE" for lb in c.http.get(LB).json()[LBS]):
        time.sleep(0.05)
    single = _list_loop(c, total, seconds / 2) / (seconds / 2)
    counts: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        n = _list_loop(Client(url, project=project), total, seconds)
        with lock:
            counts.append(n)

    cpu_before = _cpu_seconds(server_pid)
    start = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    done = sum(counts)
    return {
        "load_balancers": total,
        "clients": clients,
        "requests_per_s": round(done / elapsed, 1),
        "single_client_requests_per_s": round(single, 1),
        "server_cpu_ms_per_request": round(
            (_cpu_seconds(server_pid) - cpu_before) * 1000 / done, 2
        ),
    }


def concurrent_creates(url: str, total: int, threads: int) -> dict[str, float]:
    errors: list[str] = []
    ids: list[str] = []
    lock = threading.Lock()

    def work(k: int) -> None:
        c = Client(url)
        for i in range(k, total, threads):
            try:
                lb_id = c.create_lb(f"conc-{i}")
                with lock:
                    ids.append(lb_id)
            except Exception as exc:  # noqa: BLE001 - counted, reported as a figure
                with lock:
                    errors.append(repr(exc))

    start = time.perf_counter()
    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    c = Client(url)
    for lb_id in ids:
        c.wait_active(lb_id)
    return {
        "load_balancers": total,
        "threads": threads,
        "seconds_to_all_active": round(time.perf_counter() - start, 3),
        "errors": len(errors),
    }


def _start_server(
    state: Path, database_url: str, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``lbaas serve`` with the noop provider on a free port; ``extra_env`` adds settings."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
    env.update(
        {
            "LBAAS_STATE_DIR": str(state),
            "LBAAS_API__PORT": str(port),
            "LBAAS_LOG_LEVEL": "WARNING",
            "LBAAS_PROVIDERS__ENABLED": '["noop"]',
            "LBAAS_PROVIDERS__DEFAULT": "noop",
            "LBAAS_DATABASE__URL": database_url,
            # More load balancers than the default /24 loopback subnet holds.
            "LBAAS_NETWORK__LOOPBACK_SUBNET_CIDR": "127.16.0.0/16",
            **(extra_env or {}),
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "lbaas.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a loaded 2-core machine starts it slowly
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("lbaas serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--database-url", default="")
    parser.add_argument(
        "--keystone", action="store_true", help="token validation's cost against noauth"
    )
    args = parser.parse_args()
    q = args.quick
    if args.keystone:
        _keystone_run(args.database_url, q)
        return
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _start_server(Path(tmp), args.database_url)
        try:
            c = Client(url)
            figures: dict[str, Any] = {"database": args.database_url or "sqlite"}
            steps: list[tuple[str, Callable[[], Any]]] = [
                ("post_latency", lambda: post_latency(c, 5 if q else 200)),
                ("post_to_active_one_lb", lambda: post_to_active(c, 5 if q else 100)),
                (
                    "post_to_active_full_tree_stepwise",
                    lambda: full_tree_stepwise(c, 2 if q else 30),
                ),
                (
                    "post_to_active_full_tree_single_call",
                    lambda: full_tree_single_call(c, 2 if q else 30),
                ),
                ("batch_members_1000", lambda: batch_members(c, 50 if q else 1000)),
                (
                    "concurrent_50_lbs_10_threads",
                    lambda: concurrent_creates(url, 10 if q else 50, 10),
                ),
                (
                    "list_200",
                    lambda: list_throughput(url, proc.pid, 20 if q else 200, 1 if q else 5),
                ),
                (
                    "list_1000",
                    lambda: list_throughput(url, proc.pid, 30 if q else 1000, 1 if q else 5),
                ),
            ]
            for name, step in steps:
                figures[name] = step()
            print(json.dumps(figures, indent=2))
        finally:
            proc.terminate()
            proc.wait(20)


def _keystone_run(database_url: str, quick: bool) -> None:
    from bench.token_cost import token_validation_cost

    with tempfile.TemporaryDirectory() as tmp:

        def start(state: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
            return _start_server(state, database_url, env)

        figures = {
            "database": database_url or "sqlite",
            "token_validation_warm_cache": token_validation_cost(
                start, Path(tmp), 20 if quick else 200, 2 if quick else 10
            ),
        }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
