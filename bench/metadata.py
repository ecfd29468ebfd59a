"""Metadata proxies: time from a port bound to its proxy answering, throughput, memory.

    python bench/metadata.py [--quick] [--networks N] [--seconds S] [--clients C]

Root. The bench runs one host in a network namespace of its own (``nsenter --net``): the
control plane in-process (API on SQLite, noauth) and the agent's metadata proxies
(``MetadataProxies``: real namespaces, real HAProxy, the UNIX-socket signer) with a short
sync interval, and instances as namespaces bridged onto each network's ``brq…`` bridge.
For each of N networks it binds a port to the host through ``POST /v2.0/ports`` and
measures the seconds until a curl from the instance to 169.254.169.254 gets its instance
id. Then C clients in one instance send metadata requests through its network's proxy
for S seconds (requests/s, p50/p99), and each proxy's memory is the RSS of its HAProxy
master and worker. Everything it made is removed at the end. Prints JSON; asserts nothing
about time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HOST_ID = "bench"
CIDR = "10.0.0.0/24"
META = "http://169.254.169.254"

# Runs inside an instance: C threads, each a keep-alive connection, for S seconds.
_CLIENT = """
import http.client, json, sys, threading, time
seconds, clients = float(sys.argv[1]), int(sys.argv[2])
latencies, errors, stop = [], [0], time.monotonic() + seconds
def run():
    conn = http.client.HTTPConnection("169.254.169.254", 80, timeout=10)
    while time.monotonic() < stop:
        start = time.perf_counter()
        try:
            conn.request("GET", "/latest/meta-data/instance-id")
            reply = conn.getresponse(); reply.read()
            ok = reply.status == 200
        except OSError:
            ok = False
            conn = http.client.HTTPConnection("169.254.169.254", 80, timeout=10)
        if ok:
            latencies.append(time.perf_counter() - start)
        else:
            errors[0] += 1
threads = [threading.Thread(target=run) for _ in range(clients)]
begin = time.monotonic()
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps({"latencies": latencies, "errors": errors[0], "elapsed": time.monotonic() - begin}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1 network, 1 s of load (smoke)")
    parser.add_argument("--networks", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.networks, args.seconds = 1, 1.0
    if args.inside:
        print(json.dumps(_inside(args.inside, args), indent=2))
        return
    if os.geteuid() != 0:
        sys.exit("bench/metadata.py needs root (network namespaces)")
    prefix = f"mb{uuid.uuid4().hex[:6]}-"
    host = f"{prefix}host"
    subprocess.run(["ip", "netns", "add", host], check=True)
    try:
        argv = [sys.executable, "-W", "ignore", __file__, "--inside", prefix]
        argv += ["--networks", str(args.networks), "--seconds", str(args.seconds)]
        argv += ["--clients", str(args.clients)]
        done = subprocess.run(["nsenter", f"--net=/run/netns/{host}", "--", *argv], check=False)
    finally:
        _remove_namespaces(prefix)
    sys.exit(done.returncode)


def _remove_namespaces(prefix: str) -> None:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for name in [line.split()[0] for line in listed.splitlines() if line.startswith(prefix)]:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        for pid in pids.stdout.split():
            subprocess.run(["kill", "-9", pid], check=False)
        subprocess.run(["ip", "netns", "delete", name], check=False)


def _inside(prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    from lbaas.compose import http_app
    from lbaas.host.real import RealHostOps
    from lbaas.metadata.agent import MetadataProxies
    from tests.support.control_plane import make_settings, running_control_plane
    from tests.support.served_app import served

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    networks = [str(uuid.uuid4()) for _ in range(args.networks)]
    subnets = [
        {"id": str(uuid.uuid4()), "network_id": n, "cidr": CIDR, "name": f"bench{i}"}
        for i, n in enumerate(networks)
    ]
    with tempfile.TemporaryDirectory(prefix="mb", dir="/tmp") as state:
        settings = make_settings(
            Path(state),
            api={"auth_strategy": "noauth"},
            network={"subnets": subnets},
            agent={"mode": "netns", "namespace_prefix": prefix, "host_id": HOST_ID},
            metadata={"sync_interval": 0.1},
        )
        with running_control_plane(settings) as plane, served(http_app(plane.services)) as url:
            settings = settings.model_copy(
                update={"metadata": settings.metadata.model_copy(update={"registry_url": url})}
            )
            proxies = MetadataProxies(settings, RealHostOps(), Path(state))
            proxies.start()
            try:
                with httpx.Client(base_url=url, timeout=30) as api:
                    return _measure(prefix, networks, api, proxies, args)
            finally:
                proxies.stop()
                for network in networks:
                    proxies.host.remove(network)


def _measure(
    prefix: str, networks: list[str], api: Any, proxies: Any, args: argparse.Namespace
) -> dict[str, Any]:
    bound: list[float] = []
    instances = []
    for index, network in enumerate(networks):
        vm = _instance(prefix, index, network)
        device = str(uuid.uuid4())
        start = time.monotonic()
        body = {"network_id": network, "fixed_ips": [{"ip_address": "10.0.0.5"}],
                "device_id": device, "binding:host_id": HOST_ID}  # fmt: skip
        api.post("/v2.0/ports", json={"port": body}).raise_for_status()
        while _curl(vm) != device:
            if time.monotonic() - start > 60:
                raise SystemExit(f"network {network}'s proxy did not answer in 60 s")
            time.sleep(0.01)
        bound.append(time.monotonic() - start)
        instances.append(vm)
    load = _load(instances[0], args.seconds, args.clients)
    rss = [_proxy_rss_kib(proxies, n) for n in networks]
    return {
        "networks": len(networks),
        "sync_interval_s": 0.1,
        "bound_to_answering_s": _summary(bound),
        "requests_per_s": round(len(load["latencies"]) / load["elapsed"], 1),
        "latency_ms": {k: round(v * 1000, 2) for k, v in _summary(load["latencies"]).items()},
        "errors": load["errors"],
        "clients": args.clients,
        "seconds": args.seconds,
        "proxy_rss_kib": {"per_proxy_mean": round(sum(rss) / len(rss)), "samples": rss},
        "load_average": os.getloadavg()[0],
    }


def _instance(prefix: str, index: int, network: str) -> str:
    """An instance namespace on the network's bridge (made here, as the lab makes it)."""
    vm, outer, bridge = f"{prefix}vm{index}", f"vb{index}", f"brq{network[:11]}"
    for argv in (
        ["ip", "netns", "add", vm],
        ["ip", "link", "add", bridge, "type", "bridge"],
        ["ip", "link", "set", bridge, "up"],
        ["ip", "link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", vm],
        ["ip", "link", "set", outer, "master", bridge, "up"],
        ["ip", "-n", vm, "link", "set", "eth0", "up"],
        ["ip", "-n", vm, "link", "set", "lo", "up"],
        ["ip", "-n", vm, "addr", "add", "10.0.0.5/24", "dev", "eth0"],
        ["ip", "-n", vm, "route", "add", "169.254.169.254/32", "dev", "eth0"],
    ):
        subprocess.run(argv, check=True, capture_output=True)
    return vm


def _curl(vm: str) -> str | None:
    argv = [
        "ip",
        "netns",
        "exec",
        vm,
        "curl",
        "-sf",
        "-m",
        "2",
        f"{META}/latest/meta-data/instance-id",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def _load(vm: str, seconds: float, clients: int) -> dict[str, Any]:
    argv = ["ip", "netns", "exec", vm, sys.executable, "-c", _CLIENT, str(seconds), str(clients)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds + 120)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _proxy_rss_kib(proxies: Any, network: str) -> int:
    namespace = f"{proxies.host._prefix}meta-{network}"
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    total = 0
    for pid in pids.stdout.split():
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": round(at(0.5), 4), "p99": round(at(0.99), 4), "max": round(ordered[-1], 4)}


if __name__ == "__main__":
    main()
