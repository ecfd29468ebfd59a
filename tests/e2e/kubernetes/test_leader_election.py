"""Two replicas of the controller against one Kubernetes API (kmock with the API
server's optimistic concurrency, ``tests/support/kmock_versions.py``) and one lbaas as
Octavia: only the holder of the Lease acts; a leader that can no longer reach the API
stops before the other takes over; a clean stop hands over at once."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from lbaas.integrations.kubernetes import names
from tests.e2e.kubernetes.conftest import Octavia
from tests.support import kubernetes as k8s
from tests.support.kmock_versions import VersionedKubernetesEmulator
from tests.support.kube_replicas import (
    Replica,
    TermLog,
    assert_terms_never_overlap,
    running_replica,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.asyncio,
    pytest.mark.kmock(cls=VersionedKubernetesEmulator),
]
SVC = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def election_settings(**timings: Any) -> Any:
    return k8s.settings(lease_name=f"lead-{uuid.uuid4().hex[:8]}", **timings)


async def lease_spec(kmock: Any, name: str) -> dict[str, Any]:
    lease = await k8s.read(kmock, f"{LEASES}/{name}")
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


async def add_service(kmock: Any, name: str, addresses: list[str]) -> str:
    await kmock.post(SLICES, json=k8s.endpoint_slice(name, addresses))
    body = k8s.service(name)
    await kmock.post(SVC, json=body)
    uid: str = body["metadata"]["uid"]
    return uid


async def converged(kmock: Any, octavia: Octavia, name: str, uid: str) -> None:
    """Wait for the Service's load balancer and its ingress (the converge's last write)."""

    async def done() -> bool:
        obj = await k8s.read(kmock, f"{SVC}/{name}") or {}
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        return (
            names.ANNOTATION_STATE in annotations
            and len(octavia.load_balancers(names.uid_tag(uid))) == 1
        )

    await k8s.eventually(done, timeout=90, what=f"{name} converged")


async def leader_of(a: Replica, b: Replica) -> tuple[Replica, Replica]:
    await k8s.eventually(
        lambda: a.elector.leading or b.elector.leading, timeout=60, what="a leader"
    )
    return (a, b) if a.elector.leading else (b, a)


async def test_of_two_replicas_only_the_lease_holder_converges(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    k8s.declare_resources(kmock)
    settings = election_settings(lease_duration=15, renew_deadline=10, retry_period=0.5)
    terms: TermLog = []
    url = str(kmock.url)
    async with (
        running_replica("a", url, octavia_url, settings, terms) as a,
        running_replica("b", url, octavia_url, settings, terms) as b,
    ):
        uid = await add_service(kmock, "web", ["127.0.4.1"])
        leader, follower = await leader_of(a, b)
        await converged(kmock, octavia, "web", uid)
        assert leader.elector.leading and not follower.elector.leading
        assert leader.octavia.writes("/loadbalancers") > 0
        assert follower.octavia.calls == []
        assert follower.elector.terms == 0
        spec = await lease_spec(kmock, settings.lease_name)
        assert spec["holderIdentity"] == leader.elector.identity
    assert_terms_never_overlap(terms)
    assert terms[0] == ("start", leader.name)
    assert all(name == leader.name for _, name in terms)


async def test_a_leader_cut_off_from_the_api_stops_and_the_other_takes_over(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    """The leader's Lease calls all fail from some moment (a crash, as the cluster sees
    it: no renewal, no release). It stops its controller at the renew deadline; the
    other takes over once the Lease has expired, and converges what changes next."""
    k8s.declare_resources(kmock)
    settings = election_settings(lease_duration=3, renew_deadline=2, retry_period=0.25)
    terms: TermLog = []
    url = str(kmock.url)
    async with (
        running_replica("a", url, octavia_url, settings, terms) as a,
        running_replica("b", url, octavia_url, settings, terms) as b,
    ):
        first_uid = await add_service(kmock, "first", ["127.0.4.2"])
        await converged(kmock, octavia, "first", first_uid)
        leader, follower = await leader_of(a, b)
        before = await lease_spec(kmock, settings.lease_name)
        leader.leases.severed = True

        await k8s.eventually(
            lambda: follower.elector.leading and not leader.elector.leading,
            timeout=60,
            what="the follower leading",
        )
        after = await lease_spec(kmock, settings.lease_name)
        assert after["holderIdentity"] == follower.elector.identity
        assert after["leaseTransitions"] > before["leaseTransitions"]
        writes_before = follower.octavia.writes("/loadbalancers")
        second_uid = await add_service(kmock, "second", ["127.0.4.3"])
        await converged(kmock, octavia, "second", second_uid)
        assert follower.octavia.writes("/loadbalancers") > writes_before
    assert_terms_never_overlap(terms)
    assert ("stop", leader.name) in terms
    assert terms.index(("stop", leader.name)) < terms.index(("start", follower.name))


async def test_a_clean_stop_releases_the_lease_and_the_other_takes_over_at_once(
    kmock: Any, octavia_url: str, octavia: Octavia
) -> None:
    """The Lease lasts 600 s here: only its release can explain a takeover seen within
    the test's minute."""
    k8s.declare_resources(kmock)
    settings = election_settings(lease_duration=600, renew_deadline=10, retry_period=0.25)
    terms: TermLog = []
    url = str(kmock.url)
    async with running_replica("a", url, octavia_url, settings, terms) as a:
        await k8s.eventually(lambda: a.elector.leading, timeout=60, what="a leading")
        async with running_replica("b", url, octavia_url, settings, terms) as b:
            uid = await add_service(kmock, "web", ["127.0.4.4"])
            await converged(kmock, octavia, "web", uid)
            assert b.octavia.calls == []
            await a.stop()
            released_or_taken = await lease_spec(kmock, settings.lease_name)
            assert released_or_taken["holderIdentity"] in ("", b.elector.identity)

            await k8s.eventually(lambda: b.elector.leading, timeout=60, what="b leading")
            spec = await lease_spec(kmock, settings.lease_name)
            assert spec["holderIdentity"] == b.elector.identity
            assert spec["leaseTransitions"] == 1
            await kmock.delete(f"{SVC}/web")
            await k8s.eventually(
                lambda: octavia.load_balancers(names.uid_tag(uid)) == [],
                timeout=90,
                what="the load balancer released by b",
            )
            assert b.octavia.writes("/loadbalancers") > 0
    assert terms == [("start", "a"), ("stop", "a"), ("start", "b"), ("stop", "b")]
