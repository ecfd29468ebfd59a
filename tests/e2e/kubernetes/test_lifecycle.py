"""A Service's whole life through the controller: kmock as the Kubernetes API, lbaas
(noop provider) as Octavia. Nothing is patched: the controller talks HTTP to both."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lbaas.integrations.kubernetes import names
from tests.e2e.kubernetes.conftest import Octavia
from tests.support import kubernetes as k8s

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]
SVC = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


async def stored(kmock: Any, name: str) -> dict[str, Any] | None:
    return await k8s.read(kmock, f"{SVC}/{name}")


async def test_service_becomes_a_load_balancer_and_follows_its_endpoints(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    settings = k8s.settings()
    body = k8s.service(
        "web", ports=[("http", 80, 8080), ("dns", 53, 5353, "UDP")], sessionAffinity="ClientIP"
    )
    uid = body["metadata"]["uid"]
    await kmock.post(
        SLICES,
        json=k8s.endpoint_slice(
            "web",
            ["127.0.0.11", "127.0.0.12", "127.0.0.13"],
            ports=[("http", 8080)],
            not_ready=["127.0.0.99"],
        ),
    )
    await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, settings):

        async def ingress() -> Any:
            # The controller writes the ingress, then the record annotations, as two
            # patches: wait for the second, or the annotations below race the controller.
            obj = await stored(kmock, "web") or {}
            if names.ANNOTATION_STATE not in ((obj.get("metadata") or {}).get("annotations") or {}):
                return None
            return ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress")

        ingress_list = await k8s.eventually(
            ingress, what="status.loadBalancer.ingress and the converged record"
        )
        lbs = octavia.load_balancers(names.uid_tag(uid))
        assert len(lbs) == 1
        lb = lbs[0]
        assert ingress_list == [{"ip": lb["vip_address"]}]
        assert names.cluster_tag(settings.cluster_name) in lb["tags"]
        backends = [("127.0.0.11", 8080), ("127.0.0.12", 8080), ("127.0.0.13", 8080)]
        assert octavia.tree(lb["id"]) == {("TCP", 80): backends, ("UDP", 53): []}
        pools = octavia.get("/pools", loadbalancer_id=lb["id"])["pools"]
        assert {p["session_persistence"]["type"] for p in pools} == {"SOURCE_IP"}
        monitors = {
            octavia.get(f"/healthmonitors/{p['healthmonitor_id']}")["healthmonitor"]["type"]
            for p in pools
        }
        assert monitors == {"TCP", "UDP-CONNECT"}
        obj = await stored(kmock, "web")
        assert obj is not None
        assert names.FINALIZER in obj["metadata"]["finalizers"]
        state = json.loads(obj["metadata"]["annotations"][names.ANNOTATION_STATE])
        assert state["load_balancer_id"] == lb["id"]
        spec = json.loads(obj["metadata"]["annotations"][names.ANNOTATION_SPEC])
        assert [listener["member_count"] for listener in spec["listeners"]] == [3, 0]

        # Scaled to five, then to one: the members follow.
        five = [f"127.0.0.{i}" for i in range(11, 16)]
        await kmock.patch(f"{SLICES}/web-a", json=k8s.endpoint_slice("web", five))
        await k8s.eventually(
            lambda: len(octavia.tree(lb["id"])[("TCP", 80)]) == 5, what="five members"
        )
        await kmock.patch(f"{SLICES}/web-a", json=k8s.endpoint_slice("web", ["127.0.0.14"]))
        await k8s.eventually(
            lambda: octavia.tree(lb["id"])[("TCP", 80)] == [("127.0.0.14", 8080)], what="one member"
        )

        # A port added: a listener appears; one removed: its listener and pool go.
        await kmock.patch(
            f"{SVC}/web",
            json={
                "spec": {
                    "ports": [
                        {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                        {"name": "alt", "port": 8443, "targetPort": 8080, "protocol": "TCP"},
                    ]
                }
            },
        )
        await k8s.eventually(
            lambda: set(octavia.tree(lb["id"])) == {("TCP", 80), ("TCP", 8443)},
            what="listener for the added port, UDP one gone",
        )
        await k8s.eventually(
            lambda: len(octavia.get("/pools", loadbalancer_id=lb["id"])["pools"]) == 2,
            what="the UDP port's pool deleted",
        )

        # Deleted: the load balancer is released, then the finalizer; kmock drops it.
        await kmock.delete(f"{SVC}/web")

        async def gone() -> bool:
            return await stored(kmock, "web") is None

        await k8s.eventually(gone, what="the Service gone")
        assert octavia.load_balancers(names.uid_tag(uid)) == []


async def test_other_classes_and_types_are_left_alone(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    settings = k8s.settings()
    foreign = k8s.service("foreign", loadBalancerClass="example.com/other")
    cluster_ip = k8s.service("internal", type="ClusterIP", clusterIP="10.0.0.5")
    ours = k8s.service("ours", loadBalancerClass="lbaas.openstack.org/noop")
    for body in (foreign, cluster_ip, ours):
        await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, settings) as controller:
        await k8s.eventually(
            lambda: octavia.load_balancers(names.uid_tag(ours["metadata"]["uid"])),
            what="the load balancer of the lbaas class",
        )
        await controller.queue.wait_idle()
        assert octavia.load_balancers(names.cluster_tag(settings.cluster_name)) == [
            octavia.load_balancers(names.uid_tag(ours["metadata"]["uid"]))[0]
        ]
        lb = octavia.load_balancers(names.uid_tag(ours["metadata"]["uid"]))[0]
        assert lb["provider"] == "noop"
        for name in ("foreign", "internal"):
            obj = await stored(kmock, name)
            assert obj is not None and "finalizers" not in obj["metadata"]
        # Changing the class away from ours releases the load balancer and the finalizer.
        await kmock.patch(f"{SVC}/ours", json={"spec": {"loadBalancerClass": "example.com/x"}})
        await k8s.eventually(
            lambda: not octavia.load_balancers(names.uid_tag(ours["metadata"]["uid"])),
            what="the load balancer released",
        )

        async def released() -> bool:
            meta = (await stored(kmock, "ours") or {}).get("metadata") or {}
            return names.FINALIZER not in meta.get("finalizers", [])

        await k8s.eventually(released, what="finalizer removed")


async def test_legacy_endpoints_are_used_where_a_service_has_no_slice(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    body = k8s.service("old")
    legacy = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "old", "namespace": "default"},
        "subsets": [
            {
                "addresses": [{"ip": "127.0.0.41"}, {"ip": "127.0.0.42"}],
                "notReadyAddresses": [{"ip": "127.0.0.43"}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            }
        ],
    }
    await kmock.post("/api/v1/namespaces/default/endpoints", json=legacy)
    await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, k8s.settings()):
        lbs = await k8s.eventually(
            lambda: octavia.load_balancers(names.uid_tag(body["metadata"]["uid"])),
            what="the load balancer",
        )
        await k8s.eventually(
            lambda: (
                octavia.tree(lbs[0]["id"])
                == {("TCP", 80): [("127.0.0.41", 8080), ("127.0.0.42", 8080)]}
            ),
            what="members from the legacy Endpoints",
        )
