"""The pipeline under stress, end to end: a watch that expires (410) while changes are
missed, an orphan in Octavia, a burst of endpoint updates, a storm of real 409s from
lbaas, an Octavia refusal reported as a Kubernetes Event."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.octavia_sdk import SdkOctavia
from tests.e2e.kubernetes.conftest import Octavia
from tests.support import kubernetes as k8s

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]
SVC = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
EVENTS = "/api/v1/namespaces/default/events"


def uid_of(body: dict[str, Any]) -> str:
    return str(body["metadata"]["uid"])


async def converged(octavia: Octavia, body: dict[str, Any]) -> dict[str, Any]:
    found = await k8s.eventually(
        lambda: octavia.load_balancers(names.uid_tag(uid_of(body))),
        what=f"a load balancer for {body['metadata']['name']}",
    )
    return dict(found[0])


async def test_an_expired_watch_relists_catches_missed_services_and_sweeps_orphans(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    settings = k8s.settings()
    gate_open = threading.Event()
    watches: list[int] = []

    async def expiring_stream() -> AsyncIterator[dict[str, Any]]:
        while not gate_open.is_set():
            await asyncio.sleep(0.02)
        yield {
            "type": "ERROR",
            "object": {
                "apiVersion": "v1",
                "kind": "Status",
                "status": "Failure",
                "code": 410,
                "reason": "Expired",
                "message": "too old resource version",
            },
        }

    def first_services_watch() -> Any:
        if watches:
            return NotImplemented  # later watches: kmock's own emulation
        watches.append(1)
        return expiring_stream()

    kmock[kmock.action.WATCH, kmock.resource("", "v1", "services")] << first_services_watch
    first = k8s.service("first")
    await kmock.post(SVC, json=first)
    async with k8s.running_controller(str(kmock.url), octavia_url, settings) as controller:
        await converged(octavia, first)
        # The watch now hangs on the gate: what happens meanwhile is not seen.
        missed = k8s.service("missed")
        await kmock.post(SVC, json=missed)
        orphan_body = {
            "loadbalancer": {
                "name": "left-behind",
                "vip_subnet_id": k8s.LOOPBACK_SUBNET,
                "tags": [
                    names.cluster_tag(settings.cluster_name),
                    names.uid_tag(str(uuid.uuid4())),
                    names.service_tag("default", "ghost"),
                ],
            }
        }
        orphan = octavia.client.post("/loadbalancers", json=orphan_body).json()["loadbalancer"]
        await k8s.eventually(
            lambda: (
                octavia.get(f"/loadbalancers/{orphan['id']}")["loadbalancer"]["provisioning_status"]
                == "ACTIVE"
            ),
            what="the orphan ACTIVE",
        )
        await controller.queue.wait_idle()
        assert octavia.load_balancers(names.uid_tag(uid_of(missed))) == []
        gate_open.set()
        await converged(octavia, missed)
        await k8s.eventually(
            lambda: controller.resyncer.orphans_removed == [orphan["id"]], what="the orphan swept"
        )
        assert controller.watch_counters.expired == 1
        ours = octavia.load_balancers(names.cluster_tag(settings.cluster_name))
        assert sorted(lb["name"] for lb in ours) == sorted(
            f"kube_{settings.cluster_name}_default_{n}" for n in ("first", "missed")
        )


async def test_a_burst_of_endpoint_updates_is_coalesced(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    counting: list[k8s.CountingOctavia] = []

    def wrap(api: SdkOctavia) -> k8s.CountingOctavia:
        counting.append(k8s.CountingOctavia(api))
        return counting[0]

    body = k8s.service("burst")
    await kmock.post(SLICES, json=k8s.endpoint_slice("burst", ["127.0.0.21"]))
    await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, k8s.settings(), wrap):
        lb = await converged(octavia, body)
        before = counting[0].writes("/members")
        for step in range(50):
            addresses = [f"127.0.1.{i}" for i in range(1, 2 + step % 7)]
            await kmock.patch(f"{SLICES}/burst-a", json=k8s.endpoint_slice("burst", addresses))
        final = [(f"127.0.1.{i}", 8080) for i in range(1, 2 + 49 % 7)]
        await k8s.eventually(
            lambda: octavia.tree(lb["id"])[("TCP", 80)] == final, what="the last endpoint set"
        )
        member_writes = counting[0].writes("/members") - before
        print(f"50 endpoint updates → {member_writes} member writes")
        assert 1 <= member_writes < 25


async def test_a_storm_of_409s_is_retried_until_converged(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    inner: list[SdkOctavia] = []

    def keep(api: SdkOctavia) -> SdkOctavia:
        inner.append(api)
        return api

    body = k8s.service("stormy")
    await kmock.post(SLICES, json=k8s.endpoint_slice("stormy", ["127.0.0.31"]))
    await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, k8s.settings(), keep) as c:
        lb = await converged(octavia, body)
        stop = threading.Event()
        hammers = [
            threading.Thread(target=_hammer, args=(octavia_url, lb["id"], stop)) for _ in range(2)
        ]
        for hammer in hammers:
            hammer.start()

        def conflicts() -> int:
            return sum(n for k, n in inner[0].calls.items() if k.endswith(" 409"))

        try:
            # Endpoints keep changing while the storm lasts, until the controller has run
            # into Octavia's 409 (the storm is kept up until it has).
            step = 0
            while conflicts() == 0 and step < 300:
                step += 1
                await kmock.patch(
                    f"{SLICES}/stormy-a",
                    json=k8s.endpoint_slice(
                        "stormy", [f"127.0.2.{i}" for i in range(1, 2 + step % 5)]
                    ),
                )
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            for hammer in hammers:
                hammer.join(10)
        assert conflicts() > 0 and c.queue.counters.retries > 0
        wanted = [(f"127.0.2.{i}", 8080) for i in range(1, 7)]
        await kmock.patch(
            f"{SLICES}/stormy-a", json=k8s.endpoint_slice("stormy", [a for a, _ in wanted])
        )
        await k8s.eventually(
            lambda: octavia.tree(lb["id"])[("TCP", 80)] == wanted,
            timeout=60,
            what="members converged after the storm",
        )


def _hammer(url: str, lb_id: str, stop: threading.Event) -> None:
    """Another client updating the load balancer as fast as lbaas lets it: it is
    PENDING_UPDATE most of the time, and writes meanwhile get 409."""
    with httpx.Client(base_url=f"{url}/v2/lbaas", timeout=10) as client:
        count = 0
        while not stop.is_set():
            count += 1
            client.put(
                f"/loadbalancers/{lb_id}", json={"loadbalancer": {"description": str(count)}}
            )
            stop.wait(0.01)


async def test_an_octavia_refusal_becomes_a_warning_event(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    body = k8s.service("refused", loadBalancerIP="192.0.2.10")  # not in the VIP subnet
    await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, k8s.settings()) as c:

        async def warned() -> list[dict[str, Any]]:
            listed = await k8s.read(kmock, EVENTS) or {}
            return [e for e in listed.get("items", []) if e["involvedObject"]["name"] == "refused"]

        events = await k8s.eventually(warned, what="a Warning event on the Service")
        assert events[0]["type"] == "Warning"
        assert events[0]["reason"] == "SyncLoadBalancerFailed"
        assert "400" in events[0]["message"]
        # A refusal is permanent: never retried with backoff, and asked (and reported)
        # once, though the first list and the watch after it may both deliver the Service.
        await c.queue.wait_idle()
        counters = c.queue.counters
        assert counters.retries == 0
        assert counters.permanent == 1 and counters.runs in (1, 2)
        assert octavia.load_balancers(names.uid_tag(uid_of(body))) == []
        # A change that leaves the desired load balancer as it was is not asked again...
        runs = counters.runs
        await kmock.patch(f"{SVC}/refused", json={"metadata": {"labels": {"seen": "yes"}}})
        await k8s.eventually(lambda: counters.runs > runs, what="the labelled Service handled")
        await c.queue.wait_idle()
        assert counters.permanent == 1 and len(await warned()) == 1
        # ...one that changes it is.
        await kmock.patch(f"{SVC}/refused", json={"spec": {"loadBalancerIP": None}})
        await converged(octavia, body)
