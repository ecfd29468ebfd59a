"""``lbaas kubernetes`` as a real process, SIGKILLed in the middle of syncing 12
Services and started again: every Service ends with exactly one load balancer, no
orphan is left, and a Service deleted while the controller was dead is released. The
killed process held the leader-election Lease without releasing it: the new one takes
over once it has expired."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from lbaas.integrations.kubernetes import names
from tests.e2e.kubernetes.conftest import Octavia
from tests.support import kubernetes as k8s

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]
SVC = "/api/v1/namespaces/default/services"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
COUNT = 12
LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/lbaas-kubernetes"


async def _start(kube_url: str, octavia_url: str, cluster: str, tmp: Path, run: int) -> Any:
    env = dict(os.environ)
    env.update(
        {
            "LBAAS_STATE_DIR": str(tmp / "state"),
            "LBAAS_KUBERNETES__API_URL": kube_url,
            "LBAAS_KUBERNETES__OCTAVIA_ENDPOINT": octavia_url,
            "LBAAS_KUBERNETES__VIP_SUBNET_ID": k8s.LOOPBACK_SUBNET,
            "LBAAS_KUBERNETES__CLUSTER_NAME": cluster,
            "LBAAS_KUBERNETES__BACKOFF_BASE": "0.05",
            "LBAAS_KUBERNETES__BACKOFF_CAP": "1",
            # Leader election stays on: the second process waits for the Lease the killed
            # one still holds to expire (short here), then takes over.
            "LBAAS_KUBERNETES__LEASE_DURATION": "3",
            "LBAAS_KUBERNETES__RENEW_DEADLINE": "2",
            "LBAAS_KUBERNETES__RETRY_PERIOD": "0.25",
        }
    )
    log = open(tmp / f"controller-{run}.log", "wb")  # noqa: SIM115 - closed by the caller
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lbaas.cli", "kubernetes", env=env, stdout=log, stderr=log
    )
    log.close()
    return process


async def _stop(process: Any, sig: int) -> None:
    if process.returncode is None:
        process.send_signal(sig)
    await asyncio.wait_for(process.wait(), 20)


async def test_sigkill_mid_sync_then_restart_leaves_no_orphan_and_no_duplicate(
    kmock: Any, octavia_url: str, octavia: Octavia, tmp_path: Path
) -> None:
    k8s.declare_resources(kmock)
    cluster = k8s.settings().cluster_name
    bodies = [k8s.service(f"svc-{i}") for i in range(COUNT)]
    for i, body in enumerate(bodies):
        await kmock.post(SLICES, json=k8s.endpoint_slice(f"svc-{i}", [f"127.0.3.{i + 1}"]))
        await kmock.post(SVC, json=body)
    mine = names.cluster_tag(cluster)
    kube_url = str(kmock.url).rstrip("/")
    first = await _start(kube_url, octavia_url, cluster, tmp_path, 1)
    try:
        await k8s.eventually(
            lambda: octavia.load_balancers(mine), timeout=60, what="the first load balancer"
        )
    finally:
        await _stop(first, signal.SIGKILL)
    made_before_kill = len(octavia.load_balancers(mine))
    assert made_before_kill < COUNT, "the kill came after the sync; nothing was interrupted"
    killed_lease = await k8s.read(kmock, LEASE)
    assert killed_lease is not None
    killed_holder = killed_lease["spec"]["holderIdentity"]
    assert killed_holder.rsplit("_", 2)[1] == str(first.pid), "the killed process held the Lease"
    await kmock.delete(f"{SVC}/svc-0")  # while no controller runs

    second = await _start(kube_url, octavia_url, cluster, tmp_path, 2)
    try:

        def settled() -> bool:
            lbs = octavia.load_balancers(mine)
            return len(lbs) == COUNT - 1 and all(
                lb["provisioning_status"] == "ACTIVE" for lb in lbs
            )

        await k8s.eventually(settled, timeout=90, what=f"{COUNT - 1} load balancers")

        async def all_have_ingress() -> bool:
            for i in range(1, COUNT):
                obj = await k8s.read(kmock, f"{SVC}/svc-{i}") or {}
                if not ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
                    return False
            return await k8s.read(kmock, f"{SVC}/svc-0") is None

        await k8s.eventually(all_have_ingress, timeout=60, what="ingress on every Service")
        taken = await k8s.read(kmock, LEASE)
        assert taken is not None
        assert taken["spec"]["holderIdentity"].rsplit("_", 2)[1] == str(second.pid)
        assert taken["spec"]["leaseTransitions"] == 1
    finally:
        await _stop(second, signal.SIGTERM)
    assert second.returncode == 0
    released = await k8s.read(kmock, LEASE)
    assert released is not None and released["spec"]["holderIdentity"] == ""
    for body in bodies[1:]:
        assert len(octavia.load_balancers(names.uid_tag(body["metadata"]["uid"]))) == 1
    assert octavia.load_balancers(names.uid_tag(bodies[0]["metadata"]["uid"])) == []
