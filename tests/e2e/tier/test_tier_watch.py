"""``lbaas tier watch`` as the lab runs it: a process in the router's namespace, not the test.

``lbaas lab up --network-only --tier 3`` starts BIRD on the router and h1-h3, etcd on the
control host, a lease process per node (``lbaas.tier.node_lease``, renewing over the
fabric) and the watcher. Each node announces one VIP; the test then acts only on the lab
and reads only what runs (the router's kernel route and BIRD, the watcher's /metrics and
the nodes' logs): etcd stopped for 4 s withdraws nothing (each node's lease lapses, but
the engine is out of reach and the other nodes answer: ``peer_witness``; the watcher
cannot read the engine and marks nothing down); a node whose lease process is SIGKILLed
(BIRD still up, its session Established, no fence left to withdraw it) is withdrawn by the
watcher (session disabled, next hop gone); a node lost whole (``host-down``) is marked down
too; a restarted lease process brings its node back. ``lbaas tier status`` shows the same
from the router's side.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lbaas.config import TierSettings
from lbaas.lab.lab import Lab
from lbaas.lab.services import tier_node_files
from lbaas.lab.tier import ROUTER, LabTier
from lbaas.lab.tier_coordination import etcd_url, start_node_lease
from lbaas.lab.tier_status import watch_settings_file
from lbaas.lab.tier_watch import OWNER, watch_log
from lbaas.tier.lease import LeasePolicy

pytestmark = [pytest.mark.root, pytest.mark.slow]


def _cli(*argv: str, namespace: str = "") -> subprocess.CompletedProcess[str]:
    """``lbaas`` with ``argv``, in ``namespace`` if given (the router's reaches the fabric)."""
    inside = ["ip", "netns", "exec", namespace] if namespace else []
    done = subprocess.run(
        [*inside, sys.executable, "-m", "lbaas.cli", *argv],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def _wait(what: str, test: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)


def _metrics(lab: Lab) -> dict[tuple[str, str], float]:
    config = tomllib.loads(watch_settings_file(lab).read_text())["tier"]
    url = f"http://{config['metrics_host']}:{config['metrics_port']}/metrics"
    done = subprocess.run(
        ["ip", "netns", "exec", lab.names.router, "curl", "-sf", "-m", "10", url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return {
        (sample.name, sample.labels.get("node", "")): sample.value
        for family in text_string_to_metric_families(done.stdout)
        for sample in family.samples
    }


def _pid(lab: Lab, host: str, program: bytes) -> int:
    """The pid of ``program`` among the processes the lab registered for ``host``."""
    for process in lab.state().processes[host]:
        try:
            cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if program in cmdline:
            return process.pid
    raise AssertionError(f"no {program!r} registered for {host}")


def _lease_log(lab: Lab, index: int) -> str:
    return (tier_node_files(lab.services_dir, index)[0].parent / "lease.log").read_text()


def _sessions(tier: LabTier) -> dict[str, str]:
    return tier.control(ROUTER).bgp_sessions()


def _announcing(tier: LabTier, index: int) -> list[str]:
    """What node ``index``'s own BIRD exports (its ``vips`` protocol)."""
    return tier.control(f"h{index}").prefixes("vips")


def test_the_watcher_process_withdraws_dead_nodes_and_not_on_an_engine_outage(
    lab_name: str, tmp_path: Path
) -> None:
    base = ["--name", lab_name, "--state-dir", str(tmp_path)]
    lab = Lab(lab_name, tmp_path)
    try:
        _cli("lab", "up", "--hosts", "3", "--network-only", "--tier", "3", "--quiet", *base)
        watcher = lab.state().processes[OWNER][0].pid
        tier = LabTier(lab, (1, 2, 3))
        vip = tier.vip()
        for index in tier.nodes:
            tier.announce(index, [vip])
        tier.wait_next_hops(vip, {1, 2, 3}, 20)
        shown = _metrics(lab)
        for node in ("h1", "h2", "h3"):
            assert shown[("lbaas_tier_node_up", node)] == 1.0
            assert shown[("lbaas_tier_node_bgp_established", node)] == 1.0
            assert shown[("lbaas_tier_node_announced_vips", node)] == 1.0
        assert shown[("lbaas_tier_lease_store_up", "")] == 1.0

        # etcd stopped for 4 s: every lease lapses (1.5 s), but no node is out of the tier.
        etcd = _pid(lab, "ctl", b"etcd")
        os.kill(etcd, signal.SIGSTOP)
        try:
            time.sleep(2.0)
            during = _metrics(lab)
            assert during[("lbaas_tier_lease_store_up", "")] == 0.0
            assert all(during[("lbaas_tier_node_up", f"h{i}")] == 1.0 for i in (1, 2, 3))
            time.sleep(2.0)
            assert tier.next_hops(vip) == {1, 2, 3}
            assert set(_sessions(tier).values()) == {"up Established"}
            assert all(_announcing(tier, i) == [f"{vip}/32"] for i in (1, 2, 3))
        finally:
            os.kill(etcd, signal.SIGCONT)
        for index in (1, 2, 3):
            text = _lease_log(lab, index)
            assert "lease engine out of reach, 2 of 2 other nodes answer" in text, text[-2000:]
            assert "(fenced)" not in text.split("announcing its VIPs", 1)[1], text[-2000:]
        assert "marked down" not in watch_log(lab).read_text()

        # h2's lease process SIGKILLed: BIRD still announces, only the watcher can withdraw it.
        _wait("h2 renews again", lambda: _metrics(lab)[("lbaas_tier_lease_store_up", "")] == 1.0)
        assert _sessions(tier)["h2"] == "up Established"
        os.kill(_pid(lab, "h2", b"lbaas.tier.node_lease"), signal.SIGKILL)
        killed = time.monotonic()
        tier.wait_next_hops(vip, {1, 3}, 30)
        withdrawn_after = time.monotonic() - killed
        assert _sessions(tier)["h2"].startswith("down"), _sessions(tier)
        assert _metrics(lab)[("lbaas_tier_node_up", "h2")] == 0.0
        assert "tier node h2 marked down" in watch_log(lab).read_text()
        print(f"lease process killed -> withdrawn by the watcher: {withdrawn_after:.2f} s")

        # h3 lost whole: BFD drops its session, and the watcher marks it down as well.
        _cli("lab", "host-down", "h3", *base)
        tier.wait_next_hops(vip, {1}, 30)
        _wait("h3 marked down", lambda: _metrics(lab)[("lbaas_tier_node_up", "h3")] == 0.0)
        assert _metrics(lab)[("lbaas_tier_node_up", "h1")] == 1.0

        # h2's lease process back: its first renewal restores it (session enabled, next hop).
        policy = LeasePolicy.from_settings(TierSettings())
        start_node_lease(lab, 2, policy, etcd_url(lab), "etcd", tier.nodes)
        tier.wait_next_hops(vip, {1, 2}, 30)
        _wait("h2 up", lambda: _metrics(lab)[("lbaas_tier_node_up", "h2")] == 1.0)

        # The operator's view, from the router: the watcher's own settings file.
        config = str(watch_settings_file(lab))
        shown_status = _cli("--config", config, "tier", "status", namespace=lab.names.router)
        status: dict[str, Any] = json.loads(shown_status.stdout)
        assert status["lease_store"] == "ok"
        assert status["nodes"]["h1"]["announced"] == [f"{vip}/32"]
        assert status["nodes"]["h1"]["bgp"] == "up Established"
        assert status["nodes"]["h1"]["lease"]["held"] is True
        assert status["nodes"]["h3"]["announced"] == []
        assert status["nodes"]["h3"]["lease"] is None  # the engine lists no lease of h3
    finally:
        _cli("lab", "down", *base)
    assert (
        not Path(f"/proc/{watcher}").exists()
        or b"lbaas" not in Path(f"/proc/{watcher}/cmdline").read_bytes()
    )
