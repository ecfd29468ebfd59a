"""A partitioned tier node stops announcing BY ITSELF (issue 29: it used to renew on).

A 2-host lab whose hosts share only the network (``lbaas.lab.mounts``), a tier of both
(BIRD, BFD off), etcd on the control host and ``lbaas.tier.node_lease`` on each node
renewing over the fabric. Both announce a VIP. h2 is partitioned: it can no longer reach
etcd, and its own BIRD stops announcing (its ``vips`` protocol disabled by its lease
process, logged "fenced") while h1 announces on, and the lease watcher (``lbaas tier
watch`` in the router's namespace, reading the same etcd over the fabric, as ``lbaas lab up
--tier`` starts it) marks h2 down once etcd no longer lists its lease: the router's route to
the VIP keeps h1 only, BFD off. The seconds from the cut to that route are printed (one
lease is 1 s here). Healed, h2 announces again and the route has both nodes.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lbaas.config import TierSettings
from lbaas.lab.lab import Lab
from lbaas.lab.tier import LabTier
from lbaas.lab.tier_coordination import start_etcd, start_node_lease
from lbaas.lab.tier_watch import start_watch, watch_log
from lbaas.tier.lease import LeasePolicy

pytestmark = [pytest.mark.root, pytest.mark.slow]

POLICY = LeasePolicy(renew_interval=0.25, missed_renewals=4)  # a 1 s lease (etcd's least)


@pytest.fixture
def tier(tmp_path: Path) -> Iterator[LabTier]:
    if os.geteuid() != 0:
        pytest.skip("namespaces need root")
    if shutil.which("etcd") is None or shutil.which("bird") is None:
        pytest.skip("needs etcd (etcd-server) and BIRD")
    lab = Lab(f"f{uuid.uuid4().hex[:7]}", tmp_path)
    with lab.running(hosts=2):
        built = LabTier(lab, [1, 2], bfd=False)
        built.start()
        yield built


def _wait(what: str, test: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 90
    while not test():
        assert time.monotonic() < deadline, f"not within 90 s: {what}"
        time.sleep(0.1)


def _announcing(tier: LabTier, index: int) -> list[str]:
    """What node ``index``'s own BIRD holds in its ``vips`` protocol (what it exports)."""
    return tier.control(f"h{index}").prefixes("vips")


@pytest.mark.timeout(600)
def test_a_partitioned_node_withdraws_its_vip_by_itself(tier: LabTier) -> None:
    vip = tier.vip()
    tier.announce(1, [vip])
    tier.announce(2, [vip])
    url = start_etcd(tier.lab)
    for index in (1, 2):
        start_node_lease(tier.lab, index, POLICY, url)
    settings = TierSettings(
        lease_renew_interval=POLICY.renew_interval, lease_missed_renewals=POLICY.missed_renewals
    )
    start_watch(tier.lab, range(1, 3), settings, ("etcd", url))
    _wait("both nodes announce", lambda: all(_announcing(tier, i) == [f"{vip}/32"] for i in (1, 2)))
    tier.wait_next_hops(vip, {1, 2}, 90)

    cut = time.monotonic()
    tier.lab.partition("h2")
    tier.wait_next_hops(vip, {1}, 30)  # the watcher disabled the router's session with h2
    print(f"partitioned h2 off the router's route after {time.monotonic() - cut:.2f} s")
    _wait("h2 withdraws by itself", lambda: _announcing(tier, 2) == [])
    assert _announcing(tier, 1) == [f"{vip}/32"]
    log = (tier.lab.services_dir / "tier" / "h2" / "lease.log").read_text()
    assert "withdrawing its VIPs (fenced)" in log, log[-2000:]
    watched = watch_log(tier.lab).read_text()
    assert "tier node h2 marked down: its lease expired on the coordination engine" in watched

    tier.lab.heal("h2")
    _wait("h2 announces again", lambda: _announcing(tier, 2) == [f"{vip}/32"])
    tier.wait_next_hops(vip, {1, 2}, 90)
