"""``lbaas lab up --tier`` builds a tier; ``lbaas lab tier`` shows it; ``down`` removes it.

Network-only (no control plane), two hosts, both tier nodes: a BIRD router peered with
both, a lease agent on each. What ``lbaas lab tier`` prints is read from the running BIRDs
and the lease store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = [pytest.mark.root, pytest.mark.slow]


def _lbaas(state_dir: Path, name: str, *argv: str) -> Any:
    done = _run(state_dir, name, *argv)
    return json.loads(done.stdout)


def _run(state_dir: Path, name: str, *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lbaas.cli",
            "lab",
            *argv,
            "--name",
            name,
            "--state-dir",
            str(state_dir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_lab_up_tier_then_tier_status(lab_name: str, tmp_path: Path) -> None:
    try:
        _lbaas(tmp_path, lab_name, "up", "--hosts", "2", "--network-only", "--tier", "2")
        shown = _lbaas(tmp_path, lab_name, "tier")
        assert shown["tier"] is True and shown["lease_store"] == "ok"
        assert set(shown["nodes"]) == {"h1", "h2"}
        assert shown["router"]["sessions"] == {"h1": "up Established", "h2": "up Established"}
        for node in ("h1", "h2"):
            row = shown["nodes"][node]
            assert row["announced"] == [] and row["bgp"] == "up Established"
            assert row["lease"]["held"] is True
        text = _run(tmp_path, lab_name, "tier", "--metrics").stdout
        samples = {
            (s.name, s.labels.get("node", "")): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
        for node in ("h1", "h2"):
            assert samples[("lbaas_tier_node_up", node)] == 1.0
            assert samples[("lbaas_tier_node_bgp_established", node)] == 1.0
            assert samples[("lbaas_tier_node_announced_vips", node)] == 0.0
        assert samples[("lbaas_tier_lease_store_up", "")] == 1.0
        _lbaas(tmp_path, lab_name, "host-down", "h2")
        # BFD takes the router's session down within a second; bounded generously.
        deadline = time.monotonic() + 20
        while (down := _lbaas(tmp_path, lab_name, "tier")["nodes"]["h2"])[
            "bgp"
        ] == "up Established":
            assert time.monotonic() < deadline, down
            time.sleep(0.2)
        assert down["announced"] == "unreachable"
    finally:
        _lbaas(tmp_path, lab_name, "down")
