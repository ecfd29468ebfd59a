"""The controller against ``lbaas serve`` with the amphora provider: a Service of type
LoadBalancer with three ready endpoints (loopback backends) becomes a VIP served by real
HAProxy; endpoints scaled to five then one with no failed request; a port added becomes a
listener that serves; the Service deleted leaves nothing in lbaas.

Each backend listens on 127.0.0.1 on a port of its own, so each is one EndpointSlice
(Kubernetes lets the slices of one Service carry different ports)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lbaas.integrations.kubernetes import names
from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.serve_process import ServeInstance, running_serve
from tests.e2e.amphora.traffic import LoopingClient, answers, spread
from tests.support import kubernetes as k8s

pytestmark = [pytest.mark.slow, pytest.mark.haproxy, pytest.mark.asyncio]
SVC = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
PORT = 18080
ALT_PORT = 18081


@pytest.fixture(scope="module")
def serve() -> Iterator[ServeInstance]:
    with running_serve({"api": {"auth_strategy": "noauth"}}, prefix="lbk-") as instance:
        yield instance


def loopback_subnet(url: str) -> str:
    subnets = httpx.get(f"{url}/v2.0/subnets", timeout=10).json()["subnets"]
    return str(next(s["id"] for s in subnets if s["name"] == "lbaas-loopback"))


def backend_slice(
    index: int, backend: HttpBackend, ports: tuple[str, ...] = ("http",)
) -> dict[str, Any]:
    return k8s.endpoint_slice(
        "web", [backend.address], ports=[(p, backend.port) for p in ports], suffix=str(index)
    )


async def test_service_to_vip_through_haproxy_scaling_without_failures(
    kmock: Any, serve: ServeInstance
) -> None:
    k8s.declare_resources(kmock)
    settings = k8s.settings(vip_subnet_id=loopback_subnet(serve.url))
    backends = [HttpBackend(f"b{i}") for i in range(5)]
    try:
        for i in range(3):
            await kmock.post(SLICES, json=backend_slice(i, backends[i]))
        body = k8s.service("web", ports=[("http", PORT, "http")])
        await kmock.post(SVC, json=body)
        async with k8s.running_controller(str(kmock.url), serve.url, settings):

            async def vip() -> str | None:
                obj = await k8s.read(kmock, f"{SVC}/web") or {}
                ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress")
                return str(ingress[0]["ip"]) if ingress else None

            address = await k8s.eventually(vip, timeout=60, what="the VIP in the status")
            await k8s.eventually(lambda: answers(address, PORT), timeout=60, what="the VIP serving")
            assert set(spread(address, PORT, 30)) == {"b0", "b1", "b2"}

            with LoopingClient(address, PORT) as client:
                for i in (3, 4):
                    await kmock.post(SLICES, json=backend_slice(i, backends[i]))
                await k8s.eventually(
                    lambda: set(spread(address, PORT, 40)) == {f"b{i}" for i in range(5)},
                    timeout=60,
                    what="five backends answering",
                )
                for i in (1, 2, 3, 4):
                    await kmock.delete(f"{SLICES}/web-{i}")
                await k8s.eventually(
                    lambda: set(spread(address, PORT, 20)) == {"b0"},
                    timeout=60,
                    what="only b0 answering",
                )
            assert client.failures == [] and client.ok > 0

            await kmock.patch(
                f"{SLICES}/web-0", json=backend_slice(0, backends[0], ("http", "alt"))
            )
            await kmock.patch(
                f"{SVC}/web",
                json={
                    "spec": {
                        "ports": [
                            {"name": "http", "port": PORT, "targetPort": "http", "protocol": "TCP"},
                            {
                                "name": "alt",
                                "port": ALT_PORT,
                                "targetPort": "alt",
                                "protocol": "TCP",
                            },
                        ]
                    }
                },
            )
            await k8s.eventually(
                lambda: answers(address, ALT_PORT),
                timeout=60,
                what="the added port's listener serving",
            )

            await kmock.delete(f"{SVC}/web")

            async def gone() -> bool:
                return await k8s.read(kmock, f"{SVC}/web") is None

            await k8s.eventually(gone, timeout=60, what="the Service released and gone")
            tagged = httpx.get(
                f"{serve.url}/v2/lbaas/loadbalancers",
                params={"tags": names.uid_tag(body["metadata"]["uid"])},
            ).json()
            assert [
                lb for lb in tagged["loadbalancers"] if lb["provisioning_status"] != "DELETED"
            ] == []
            assert not answers(address, PORT)
    finally:
        for backend in backends:
            backend.close()
