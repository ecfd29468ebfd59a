"""Takeover across the lab's hosts: the ``lab`` measurement of ``bench/failover.py`` (root).

A 3-host lab (``tests.support.lab_pair.lab_world``: ``lbaas lab``'s namespaces, its control
plane and an enrolled netns agent per host, members on the router) runs one ACTIVE_STANDBY
load balancer; a client in the lab's client namespace loops requests through its VIP, each
on a new connection. Trials, one after the other on the same load balancer:

- ``partition`` (``--lab-trials`` of them, 1 by default): the MASTER's host is cut off (``lab.partition``:
  its links down, its processes running). The BACKUP takes over; the health manager hears
  the MASTER no more and has a new BACKUP built on the third host; then the partition
  heals. Recorded: the takeover (from the first request that failed after the cut to the
  end of the first request served after that), the failed requests and the longest gap in service over the whole trial (heal
  included), the time until the new BACKUP's keepalived says BACKUP, and after the heal the
  time until exactly one amphora namespace holds the VIP (the survivor; the old MASTER's is
  removed by the returning host's agent) and until the router's neighbour entry for the VIP
  is the holder's MAC. ``dual_holder_seen`` says whether two namespaces were seen holding
  the VIP at once after the heal.
  The lab's control plane keeps the per-load-balancer failover breaker (3 automatic
  failovers in 300 s), so more than two partitions plus the host loss leave the last
  replacement undone: ``--lab-trials`` is 1 by default.
- ``host_down`` (one, last: the host does not come back): the MASTER's host is lost
  (``lab.host_down``: its processes frozen, its links cut, then all SIGKILLed).
  The same figures, without the heal.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lbaas.model.enums import AmphoraRole
from tests.support.lab_pair import (
    LabWorld,
    NamespaceLoopingClient,
    amphora_namespace,
    create_pair,
    holder_mac,
    keepalived_entered,
    lab_world,
    live_amphorae,
    router_mac,
    vip_holders,
    vip_of,
)
from tests.support.vrrp_pair import LoopingClient

TIMEOUT = 120.0


def _wait(condition: Callable[[], bool], timeout: float = TIMEOUT) -> float:
    """Seconds until ``condition`` held; raises after ``timeout``."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"condition not met within {timeout}s")
        time.sleep(0.02)
    return time.monotonic() - start


def _settled(world: LabWorld, lb_id: str, vip: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Wait for a whole pair: the MASTER holding the VIP alone, the BACKUP in BACKUP; both."""
    world.api.wait_active(lb_id)

    def whole() -> bool:
        roles = {a["role"]: a for a in live_amphorae(world, lb_id)}
        if set(roles) != {AmphoraRole.MASTER, AmphoraRole.BACKUP} or len(roles) != 2:
            return False
        master, backup = roles[AmphoraRole.MASTER], roles[AmphoraRole.BACKUP]
        return vip_holders(world, vip) == [amphora_namespace(world, master)] and (
            keepalived_entered(world, backup, AmphoraRole.BACKUP) > 0
        )

    _wait(whole)
    roles = {a["role"]: a for a in live_amphorae(world, lb_id)}
    return roles[AmphoraRole.MASTER], roles[AmphoraRole.BACKUP]


def _gap(client: LoopingClient, start: float, end: float) -> float:
    """Longest time between two successive successful requests ending in [start, end]."""
    ends = [start] + [
        a.ended for a in list(client.attempts) if a.body is not None and start <= a.ended <= end
    ]
    return max((b - a for a, b in zip(ends, ends[1:], strict=False)), default=0.0)


def _first_failure(client: LoopingClient, after: float) -> float:
    """When the first request that failed after ``after`` started (``after`` if none)."""
    failed = (a.started for a in list(client.attempts) if a.started > after and a.body is None)
    return next(failed, after)


def _trial(
    world: LabWorld, lb_id: str, client: LoopingClient, *, partition: bool
) -> dict[str, Any]:
    vip = vip_of(world, lb_id)
    master, backup = _settled(world, lb_id, vip)
    lost, survivor = str(master["compute_id"]), amphora_namespace(world, backup)
    time.sleep(0.5)  # the client settled on the MASTER
    skip = () if partition else (lost,)
    cut = time.monotonic()
    (world.lab.partition if partition else world.lab.host_down)(lost)
    done = time.monotonic()  # the host is cut off or dead from here on
    figures: dict[str, Any] = {"host": lost, "cut_s": done - cut}
    figures["vip_moved_s"] = _wait(lambda: survivor in vip_holders(world, vip, skip))
    # The outage starts with the first request that fails after the cut (a request in
    # flight when the host is lost may still have been answered).
    _wait(lambda: client.served_after(done) is not None)
    outage = _first_failure(client, cut)
    served = client.served_after(outage)
    assert served is not None
    figures["takeover_s"] = served.ended - outage
    figures["failed_in_takeover"] = client.failed_between(cut, served.started)
    known = {master["id"], backup["id"]}

    def replaced() -> bool:
        return any(
            a["id"] not in known and keepalived_entered(world, a, AmphoraRole.BACKUP) > 0
            for a in live_amphorae(world, lb_id)
        )

    _wait(replaced)
    figures["replacement_ready_s"] = time.monotonic() - cut
    if partition:
        figures.update(_heal(world, lost, vip, survivor, amphora_namespace(world, master)))
    end = time.monotonic() + 1.0
    time.sleep(1.0)  # served on after the last step
    figures["failed"] = client.failed_between(cut, end)
    figures["longest_gap_s"] = _gap(client, cut, end)
    return figures


def _heal(world: LabWorld, host: str, vip: str, survivor: str, old: str) -> dict[str, Any]:
    healed = time.monotonic()
    world.lab.heal(host)
    seen = 1
    old_gone: float | None = None

    def one_holder() -> bool:
        nonlocal seen, old_gone
        holders = vip_holders(world, vip)
        seen = max(seen, len(holders))
        if old_gone is None and old not in holders:
            old_gone = time.monotonic() - healed
        return holders == [survivor]

    single = _wait(one_holder)
    _wait(lambda: router_mac(world, vip) == holder_mac(survivor, vip))
    return {
        "single_holder_after_heal_s": single,
        # How long the old MASTER kept the VIP once it could be heard again (it held it
        # all through the partition, cut off): the dual-holder window the fence shortens.
        "old_master_holds_after_heal_s": single if old_gone is None else old_gone,
        "router_on_holder_after_heal_s": time.monotonic() - healed,
        "dual_holder_seen": seen > 1,
    }


def _summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    rounded = [
        {k: round(v, 3) if isinstance(v, float) else v for k, v in t.items()} for t in trials
    ]
    takeovers = [t["takeover_s"] for t in trials]
    healed = [
        t["old_master_holds_after_heal_s"] for t in trials if "old_master_holds_after_heal_s" in t
    ]
    extra = {"old_master_holds_after_heal_max_s": round(max(healed), 3)} if healed else {}
    return {
        "trials": len(trials),
        "takeover_p50_s": round(statistics.median(takeovers), 3),
        "takeover_max_s": round(max(takeovers), 3),
        "longest_gap_max_s": round(max(t["longest_gap_s"] for t in trials), 3),
        "failed_requests": [t["failed"] for t in trials],
        "replacement_ready_max_s": round(max(t["replacement_ready_s"] for t in trials), 3),
        **extra,
        "per_trial": rounded,
    }


def lab_takeover(args: argparse.Namespace) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="lab", dir="/tmp"))  # short: socket paths
    try:
        with lab_world(directory, hosts=3, prefix="b") as world:
            lb_id = create_pair(world, "bench")
            world.api.wait_active(lb_id)
            vip = vip_of(world, lb_id)
            names = world.lab.names
            with NamespaceLoopingClient(vip, namespace=names.client, timeout=0.5) as client:
                partitions = [
                    _trial(world, lb_id, client, partition=True) for _ in range(args.lab_trials)
                ]
                host_down = _trial(world, lb_id, client, partition=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "hosts": 3,
        "client_request_timeout_s": 0.5,
        "partition": _summary(partitions),
        "host_down": _summary([host_down]),
    }
