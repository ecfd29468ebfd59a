"""The agent's part of a create, with and without a spare: the ``agent_create`` measurement
of ``bench/failover.py`` (root; ``--agent-trials N`` of each, interleaved).

What spares change happens inside the agent's ``PUT /v1/amphorae/{id}``, which the
controller's noise (job polling, the API, the old amphora's removal) hides in the
``single`` measurement on a shared machine. Here two registries in netns mode share one
directory, one with a pool of one spare (refilled, untimed, before each of its trials), one
without; trials alternate between them so that both see the same load. Each trial PUTs a
new amphora (an HTTP listener on a VIP of a subnet of its own) and is timed until the PUT
returns (HAProxy running the configuration, VIP plumbed); the amphora is then deleted,
untimed. Also printed: the memory of a ready spare (VmRSS of its HAProxy master and
worker, and their proportional share, Pss, which counts shared pages once).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "agent"))

from agent_e2e_support import Server, haproxy_config  # noqa: E402

from lbaas.amphora.plumbing import bridge_name  # noqa: E402
from lbaas.amphora.registry import AmphoraRegistry  # noqa: E402
from lbaas.amphora.spare_slot import SpareSlots  # noqa: E402
from lbaas.amphora.spares import SparePool  # noqa: E402
from lbaas.host.real import RealHostOps  # noqa: E402
from lbaas.wire.amphora import AmphoraSpec, NetworkSpec, VipSpec  # noqa: E402
from tests.support.scratch_subnets import pick_subnets  # noqa: E402

PREFIX = "lbsc-"


def _memory_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, Pss) of ``pid`` and its children, in KiB."""
    pids = [pid] + [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and _parent(int(entry.name)) == pid
    ]
    rss = pss = 0
    for each in pids:
        for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss, pss


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def agent_create(args: argparse.Namespace) -> dict[str, Any]:
    """The ``agent_create`` measurement of ``bench/failover.py``."""
    trials = 3 if args.quick else args.agent_trials
    host = RealHostOps()
    root = Path(tempfile.mkdtemp(prefix="lbsc-", dir="/tmp")) / "amphorae"
    pool = SparePool(SpareSlots(root, host, PREFIX), 1)
    with_spares = AmphoraRegistry(root, host, mode="netns", namespace_prefix=PREFIX, spares=pool)
    without = AmphoraRegistry(root, host, mode="netns", namespace_prefix=PREFIX)
    (net,) = pick_subnets(1)
    subnet = str(net.network_address).rsplit(".", 1)[0]
    tag = uuid.uuid4().hex[:6]
    times: dict[str, list[float]] = {"with_spare": [], "without": []}
    try:
        pool.fill()
        (spare,) = pool.status().ready
        rss, pss = _memory_kib(spare.master_pid)
        for index in range(2 * trials):
            registry, key = (with_spares, "with_spare") if index % 2 else (without, "without")
            pool.fill()
            amphora_id = f"amp-{tag}-{index}"
            spec = AmphoraSpec(
                version=1,
                loadbalancer_id=f"lb-{tag}",
                **haproxy_config(
                    root / amphora_id, f"{subnet}.10", 8080, [Server("m1", f"{subnet}.1", 9)]
                ),
                vip=VipSpec(address=f"{subnet}.10", subnet_cidr=f"{subnet}.0/24", network_id=tag),
                network=NetworkSpec(vip_host_address=f"{subnet}.1"),
            )
            started = time.perf_counter()
            status = registry.put(amphora_id, spec)
            times[key].append(time.perf_counter() - started)
            assert status.running, status
            registry.delete(amphora_id)
    finally:
        for registry in (with_spares, without):
            for amphora_id in registry.amphora_ids():
                registry.delete(amphora_id)
        pool.close()
        host.delete_link(bridge_name(tag))
        shutil.rmtree(root.parent, ignore_errors=True)
    return {
        "trials_each": trials,
        "taken_from_pool": pool.taken,
        **{
            f"put_{key}_s": {
                "p50": round(statistics.median(values), 3),
                "max": round(max(values), 3),
                "samples": [round(v, 3) for v in values],
            }
            for key, values in times.items()
        },
        "spare_rss_kib": rss,
        "spare_pss_kib": pss,
    }
