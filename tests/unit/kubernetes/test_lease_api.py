"""The Lease calls of ``LightkubeKube`` against kmock: first what plain kmock 0.8 does
(no optimistic concurrency, which is why the election tests use the versioned emulator),
then the versioned emulator's 409s as a real API server gives them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from lbaas.integrations.kubernetes.base import Conflict
from lbaas.integrations.kubernetes.kube_client import LightkubeKube
from lbaas.integrations.kubernetes.kube_config import for_server
from tests.support.kmock_versions import VersionedKubernetesEmulator

pytestmark = pytest.mark.asyncio
NS = "default"


def lease(holder: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "lead", "namespace": NS},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
    }


@pytest_asyncio.fixture
async def kube(kmock: Any) -> AsyncIterator[LightkubeKube]:
    kmock.resources["coordination.k8s.io/v1/leases"] = {}
    client = LightkubeKube(for_server(str(kmock.url)))
    try:
        yield client
    finally:
        await client.aclose()


async def test_plain_kmock_applies_a_patch_with_a_stale_resource_version(
    kube: LightkubeKube,
) -> None:
    """What kmock 0.8 does on its own: a create of an existing name is refused, but a
    patch's resourceVersion is no precondition (and none is assigned)."""
    created = await kube.create_lease(lease("a"))
    assert "resourceVersion" not in created["metadata"]
    with pytest.raises(Conflict):
        await kube.create_lease(lease("b"))
    stale = {"metadata": {"resourceVersion": "no-such-version"}, "spec": {"holderIdentity": "b"}}
    patched = await kube.update_lease(NS, "lead", stale)
    assert patched["spec"]["holderIdentity"] == "b"


@pytest.mark.kmock(cls=VersionedKubernetesEmulator)
async def test_a_stale_resource_version_gets_409_and_changes_nothing(
    kube: LightkubeKube,
) -> None:
    assert await kube.get_lease(NS, "lead") is None
    created = await kube.create_lease(lease("a"))
    first = created["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        await kube.create_lease(lease("b"))

    renewed = await kube.update_lease(
        NS, "lead", {"metadata": {"resourceVersion": first}, "spec": {"leaseTransitions": 1}}
    )
    second = renewed["metadata"]["resourceVersion"]
    assert second != first
    with pytest.raises(Conflict):
        await kube.update_lease(
            NS, "lead", {"metadata": {"resourceVersion": first}, "spec": {"holderIdentity": "b"}}
        )
    stored = await kube.get_lease(NS, "lead")
    assert stored is not None
    assert stored["spec"]["holderIdentity"] == "a"
    assert stored["metadata"]["resourceVersion"] == second
