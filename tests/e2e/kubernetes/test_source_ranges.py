"""A Service's source ranges end to end: kmock as the Kubernetes API, lbaas (noop
provider) as Octavia. The listeners' allowed_cidrs follow spec.loadBalancerSourceRanges
and the annotation, each change an update in place; an invalid range is a Warning Event
and leaves the listeners as they were."""

from __future__ import annotations

from typing import Any

import pytest

from lbaas.integrations.kubernetes import names
from tests.e2e.kubernetes.conftest import Octavia
from tests.support import kubernetes as k8s

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]
SVC = "/api/v1/namespaces/default/services"
EVENTS = "/api/v1/namespaces/default/events"


def _networks(octavia: Octavia, lb_id: str) -> dict[tuple[str, int], tuple[str, frozenset[str]]]:
    """(protocol, port) → (listener id, its allowed_cidrs)."""
    return {
        (item["protocol"], item["protocol_port"]): (
            item["id"],
            frozenset(item["allowed_cidrs"] or ()),
        )
        for item in octavia.get("/listeners", loadbalancer_id=lb_id)["listeners"]
    }


async def _follows(octavia: Octavia, lb_id: str, wanted: set[str], what: str) -> Any:
    def matches() -> Any:
        found = _networks(octavia, lb_id)
        ok = len(found) == 2 and all(cidrs == wanted for _, cidrs in found.values())
        return found if ok else None

    return await k8s.eventually(matches, what=what)


async def _patch(kmock: Any, body: dict[str, Any], version: int) -> None:
    """A change as the API server would store it: kmock keeps no ``resourceVersion``, so
    the patch sets the next one (the controller remembers a refusal per version)."""
    meta = body.setdefault("metadata", {})
    meta["resourceVersion"] = str(version)
    await kmock.patch(f"{SVC}/ranged", json=body)


async def test_listeners_allowed_cidrs_follow_the_services_source_ranges(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    body = k8s.service(
        "ranged",
        ports=[("http", 80, 8080), ("dns", 53, 53, "UDP")],
        loadBalancerSourceRanges=["10.1.2.3/8", "192.0.2.0/24"],
    )
    await kmock.post(SVC, json=body)
    async with k8s.running_controller(str(kmock.url), octavia_url, k8s.settings()) as c:
        lbs = await k8s.eventually(
            lambda: octavia.load_balancers(names.uid_tag(body["metadata"]["uid"])),
            what="the load balancer",
        )
        lb_id = lbs[0]["id"]
        first = await _follows(
            octavia, lb_id, {"10.0.0.0/8", "192.0.2.0/24"}, "the spec's ranges on both listeners"
        )
        ids = {key: listener_id for key, (listener_id, _) in first.items()}

        await _patch(kmock, {"spec": {"loadBalancerSourceRanges": ["198.51.100.0/24"]}}, 2)
        changed = await _follows(octavia, lb_id, {"198.51.100.0/24"}, "the narrowed range")
        assert {key: listener_id for key, (listener_id, _) in changed.items()} == ids

        # The spec field emptied, the annotation set: the annotation is read.
        annotations = {names.ANNOTATION_SOURCE_RANGES: "203.0.113.0/24, 198.51.100.7/32"}
        await _patch(
            kmock,
            {"metadata": {"annotations": annotations}, "spec": {"loadBalancerSourceRanges": []}},
            3,
        )
        await _follows(
            octavia, lb_id, {"203.0.113.0/24", "198.51.100.7/32"}, "the annotation's ranges"
        )

        # An invalid range: a Warning Event naming it, the listeners left as they were.
        bad = {names.ANNOTATION_SOURCE_RANGES: "203.0.113.0/24,not-a-range"}
        await _patch(kmock, {"metadata": {"annotations": bad}}, 4)

        async def warned() -> list[dict[str, Any]]:
            listed = await k8s.read(kmock, EVENTS) or {}
            return [e for e in listed.get("items", []) if e["involvedObject"]["name"] == "ranged"]

        events = await k8s.eventually(warned, what="a Warning event on the Service")
        assert events[0]["type"] == "Warning"
        assert "'not-a-range' is not a CIDR" in events[0]["message"]
        await c.queue.wait_idle()
        kept = _networks(octavia, lb_id)
        assert {cidrs for _, cidrs in kept.values()} == {
            frozenset({"203.0.113.0/24", "198.51.100.7/32"})
        }

        # Corrected to no ranges at all: every source admitted again.
        await _patch(kmock, {"metadata": {"annotations": {names.ANNOTATION_SOURCE_RANGES: ""}}}, 5)
        await _follows(octavia, lb_id, set(), "the filter removed")
        assert {
            key: listener_id for key, (listener_id, _) in _networks(octavia, lb_id).items()
        } == ids
