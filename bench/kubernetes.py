"""Kubernetes controller benchmark: prints JSON figures for ``lbaas kubernetes``.

    python bench/kubernetes.py [--quick] [--services N] [--many M]

kmock (the Kubernetes API emulator) runs in this process; the controller runs in this
process too, talking HTTP to kmock and to lbaas like the real command does.

Part one, against ``lbaas serve`` with the amphora provider (real HAProxy, loopback
backends): N Services created one after another, each timed from its POST to kmock to
the first request its VIP answers; then endpoint changes on one Service (a slice with a
new backend added, then removed), timed to that backend's first answer through the VIP
and to its last, with the Octavia API calls the controller made per change.

Part two, against an in-process lbaas control plane with the noop provider (SQLite): M
Services created at once, timed until every one has ``status.loadBalancer.ingress``
(with the CPU time this process spent meanwhile: lbaas's API and worker, kmock and the
controller all run in it, so on a busy machine wall time is mostly waiting for a core);
then a burst of 50 endpoint updates to one Service, with the member writes it caused.

``--quick`` runs tiny sizes (the smoke test). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import kmock  # noqa: E402

from tests.e2e.amphora.backends import HttpBackend  # noqa: E402
from tests.e2e.amphora.serve_process import running_serve  # noqa: E402
from tests.e2e.amphora.traffic import request  # noqa: E402
from tests.support import kubernetes as k8s  # noqa: E402
from tests.support.control_plane import asgi_app, make_settings, running_control_plane  # noqa: E402
from tests.support.served_app import served  # noqa: E402

SVC = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
PORT = 18180


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _summary(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {
        "count": len(ordered),
        "p50_ms": _ms(statistics.median(ordered)),
        "p95_ms": _ms(p95),
        "max_ms": _ms(ordered[-1]),
    }


def _answered_by(address: str, port: int) -> str | None:
    try:
        reply = request(address, port, timeout=1)
    except OSError:
        return None
    return reply.text if reply.status == 200 else None


async def _until(condition: Any, timeout: float = 120.0, pause: float = 0.005) -> float:
    """Seconds until ``condition()`` (a coroutine function) is truthy."""
    start = time.monotonic()
    while not await condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"not reached in {timeout}s")
        await asyncio.sleep(pause)
    return time.monotonic() - start


async def _ingress(km: Any, name: str) -> str | None:
    obj = await k8s.read(km, f"{SVC}/{name}") or {}
    found = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress")
    return str(found[0]["ip"]) if found else None


async def _first_served(km: Any, names: list[str], backends: list[HttpBackend]) -> list[float]:
    samples = []
    for name, backend in zip(names, backends, strict=True):
        await km.post(
            SLICES, json=k8s.endpoint_slice(name, [backend.address], ports=[("http", backend.port)])
        )
        start = time.monotonic()
        await km.post(SVC, json=k8s.service(name, ports=[("http", PORT, "http")]))

        async def serving(name: str = name) -> bool:
            address = await _ingress(km, name)
            return (
                bool(address) and await asyncio.to_thread(_answered_by, address, PORT) is not None
            )

        await _until(serving)
        samples.append(time.monotonic() - start)
    return samples


async def _endpoint_changes(
    km: Any, name: str, extra: list[HttpBackend], counting: k8s.CountingOctavia
) -> dict[str, Any]:
    address = await _ingress(km, name)
    assert address is not None
    join, leave = [], []
    calls_before = len(counting.calls)
    for index, backend in enumerate(extra):
        slice_name = f"x{index}"
        start = time.monotonic()
        await km.post(
            SLICES,
            json=k8s.endpoint_slice(
                name, [backend.address], ports=[("http", backend.port)], suffix=slice_name
            ),
        )

        async def joined(backend: HttpBackend = backend) -> bool:
            return await asyncio.to_thread(_answered_by, address, PORT) == backend.name

        await _until(joined)
        join.append(time.monotonic() - start)
        start = time.monotonic()
        await km.delete(f"{SLICES}/{name}-{slice_name}")
        seen_before = backend.requests_seen

        async def left(backend: HttpBackend = backend) -> bool:
            nonlocal seen_before
            for _ in range(6):
                await asyncio.to_thread(_answered_by, address, PORT)
            gone = backend.requests_seen == seen_before
            seen_before = backend.requests_seen
            return gone

        await _until(left)
        leave.append(time.monotonic() - start)
    changes = 2 * len(extra)
    calls = counting.calls[calls_before:]
    return {
        "member_joined_to_first_answer": _summary(join),
        "member_removed_to_last_answer": _summary(leave),
        "octavia_calls_per_endpoint_change": round(len(calls) / changes, 1),
        "octavia_writes_per_endpoint_change": round(
            sum(1 for m, _ in calls if m != "GET") / changes, 1
        ),
        "note_removed": "time until six requests in a row no longer reach the removed backend",
    }


async def _part_one(url: str, subnet: str, services: int, changes: int) -> dict[str, Any]:
    backends = [HttpBackend(f"b{i}") for i in range(services + changes)]
    counting: list[k8s.CountingOctavia] = []
    try:
        async with kmock.KubernetesEmulator() as km, kmock.Server(km):
            k8s.declare_resources(km)
            settings = k8s.settings(vip_subnet_id=subnet)

            def wrap(api: Any) -> k8s.CountingOctavia:
                counting.append(k8s.CountingOctavia(api))
                return counting[0]

            async with k8s.running_controller(str(km.url), url, settings, wrap) as controller:
                names = [f"s{i}" for i in range(services)]
                first = await _first_served(km, names, backends[:services])
                figures = await _endpoint_changes(km, names[0], backends[services:], counting[0])
                for name in names:
                    await km.delete(f"{SVC}/{name}")
                await controller.queue.wait_idle()
        return {"service_post_to_vip_first_answer": _summary(first)} | figures
    finally:
        for backend in backends:
            backend.close()


async def _part_two(url: str, many: int) -> dict[str, Any]:
    async with kmock.KubernetesEmulator() as km, kmock.Server(km):
        k8s.declare_resources(km)
        counting: list[k8s.CountingOctavia] = []

        def wrap(api: Any) -> k8s.CountingOctavia:
            counting.append(k8s.CountingOctavia(api))
            return counting[0]

        async with k8s.running_controller(str(km.url), url, k8s.settings(), wrap) as controller:
            names = [f"m{i}" for i in range(many)]
            start, cpu_start = time.monotonic(), time.process_time()
            for i, name in enumerate(names):
                await km.post(SLICES, json=k8s.endpoint_slice(name, [f"127.0.4.{i % 250 + 1}"]))
                await km.post(SVC, json=k8s.service(name))

            async def all_ingress() -> bool:
                listed = await k8s.read(km, SVC) or {}
                ready = [
                    svc
                    for svc in listed.get("items", [])
                    if ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress")
                ]
                return len(ready) == many

            await _until(all_ingress, timeout=600, pause=0.1)
            converge_s = time.monotonic() - start
            cpu_s = time.process_time() - cpu_start
            runs, calls = controller.queue.counters.runs, len(counting[0].calls)
            before = counting[0].writes("/members")
            for step in range(50):
                addresses = [f"127.0.5.{i}" for i in range(1, 2 + step % 7)]
                await km.patch(f"{SLICES}/m0-a", json=k8s.endpoint_slice("m0", addresses))
            await controller.queue.wait_idle()
            burst_writes = counting[0].writes("/members") - before
    return {
        "services_created_at_once": many,
        "all_converged_s": round(converge_s, 2),
        "process_cpu_s_until_converged": round(cpu_s, 2),
        "handler_runs_until_converged": runs,
        "octavia_calls_until_converged": calls,
        "burst_of_50_endpoint_updates_member_writes": burst_writes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--services", type=int, default=20)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--many", type=int, default=100)
    parser.add_argument("--part", choices=("all", "amphora", "noop"), default="all")
    args = parser.parse_args()
    services, changes, many = (2, 1, 5) if args.quick else (args.services, args.changes, args.many)
    result: dict[str, Any] = {
        "quick": args.quick,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    if args.part in ("all", "amphora"):
        result["amphora"] = _amphora(services, changes)
    if args.part in ("all", "noop"):
        result["noop"] = _noop(many)
    result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0


def _amphora(services: int, changes: int) -> dict[str, Any]:
    with running_serve({"api": {"auth_strategy": "noauth"}}, prefix="lbkb-") as serve:
        subnets = httpx.get(f"{serve.url}/v2.0/subnets", timeout=10).json()["subnets"]
        subnet = next(s["id"] for s in subnets if s["name"] == "lbaas-loopback")
        return asyncio.run(_part_one(serve.url, subnet, services, changes))


def _noop(many: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as state:
        settings = make_settings(Path(state), api={"auth_strategy": "noauth"})
        with running_control_plane(settings) as plane, served(asgi_app(plane)) as url:
            return asyncio.run(_part_two(url, many))


if __name__ == "__main__":
    sys.exit(main())
