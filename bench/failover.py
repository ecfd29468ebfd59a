"""Failover figures of issue 11, printed as one JSON object (root: netns mode).

    python bench/failover.py [--trials 10] [--soak-seconds 600] [--advert-ms 100]
                             [--lab-trials 1] [--host-loss-trials 5] [--load-balancers 6]
                             [--single-trials 5] [--spares 0] [--refill-wait 3]
                             [--agent-trials 10]
                             [--only takeover,soak,lab,host_loss,single,agent_create]
                             [--quick]

Each measurement is one function of ``MEASUREMENTS`` (name -> function of the parsed
arguments returning a JSON-able dict); ``--only`` picks some. Another measurement (such
as SINGLE host-loss recovery) is added by writing its function and registering it there,
or in its own script that imports ``run_measurements`` and its own table.

- ``takeover``: an ACTIVE_STANDBY pair (``tests.support.vrrp_pair``: two amphora
  namespaces with real keepalived and HAProxy, real backends) serves a client that loops
  requests, each on a new connection, through the VIP. For each trial the MASTER's
  keepalived and HAProxy are killed with SIGKILL; the takeover time is from the last
  signal to the end of the first request that succeeds after it, and the failed requests
  are those started in between. Then the dead amphora is replaced by a new one that joins
  as BACKUP (``replacement_ready_s``: until its keepalived says BACKUP), and the next
  trial kills the survivor. ``persistence_kept`` counts trials in which the client (one
  source address, SOURCE_IP persistence) reached the same member after the takeover.
- ``soak``: an idle pair while ``os.cpu_count()`` busy loops keep every core busy;
  ``spurious_takeovers`` counts MASTER elections after the first (zero is the target).
- ``lab`` (``failover_lab.py``): the same pair across a 3-host lab, its MASTER's host
  partitioned (then healed: one VIP holder must remain) and lost; takeover, failed
  requests, longest gap, replacement BACKUP ready.
- ``host_loss`` (``failover_host_loss.py``, no root needed): SINGLE load balancers of a
  lost host serving again from other hosts, on loopback agents (``bench/host_loss.py``
  measures the same in the lab, with the host lost at one instant).
- ``single`` (``failover_single.py``, root): SINGLE create and failover through ``lbaas
  serve`` in netns mode, with ``--spares N`` spare amphora slots on its agent (issue 35:
  run it with 0 and with 2 to compare); create -> ACTIVE, failover PUT -> ACTIVE and ->
  the VIP answering again.
- ``agent_create`` (``failover_spare_create.py``, root): the agent's own PUT of a new
  amphora in netns mode with a spare and without, interleaved, and the memory of a spare.

Targets (issue 11): takeover p50 <= 0.5 s and max < 1 s; host-loss recovery <= 5 s; zero
spurious takeovers. Issue 35: SINGLE failover <= 0.5 s with spares.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from failover_host_loss import host_loss  # noqa: E402
from failover_lab import lab_takeover  # noqa: E402
from failover_single import single_failover  # noqa: E402
from failover_spare_create import agent_create  # noqa: E402

from lbaas.model.enums import AmphoraRole  # noqa: E402
from tests.support.vrrp_pair import LoopingClient, VrrpPair  # noqa: E402

Measurement = Callable[[argparse.Namespace], dict[str, Any]]


def _wait(condition: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``condition`` held; raises after ``timeout``."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"condition not met within {timeout}s")
        time.sleep(0.01)
    return time.monotonic() - start


def _pair(args: argparse.Namespace, root: Path) -> VrrpPair:
    pair = VrrpPair(root, advert_interval_ms=args.advert_ms, realtime_priority=args.rt_priority)
    pair.start()
    _wait(lambda: len(pair.holders()) == 1, 30)
    return pair


def _one_takeover(pair: VrrpPair, client: LoopingClient) -> dict[str, Any]:
    """Kill the MASTER, time the takeover, replace the dead amphora; this trial's figures."""
    (master,) = pair.holders()
    (backup,) = [a for a in pair.live() if a != master]
    _wait(lambda: pair.entered(backup, AmphoraRole.BACKUP) > 0, 30)
    time.sleep(0.5)  # the HAProxys' tables in step, the client settled
    before = client.served_after(time.monotonic() - 0.5)
    killed = pair.kill(master)
    moved = _wait(lambda: backup in pair.holders(), 30)
    _wait(lambda: client.served_after(killed) is not None, 30)
    served = client.served_after(killed)
    assert served is not None
    started = time.monotonic()
    new = pair.replace(master)
    _wait(lambda: pair.entered(new, AmphoraRole.BACKUP) > 0, 30)
    return {
        "takeover_s": served.ended - killed,
        "vip_moved_s": moved,
        "failed": client.failed_between(killed, served.started),
        "kept": before is not None and before.body == served.body,
        "ready_s": time.monotonic() - started,
    }


def takeover(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="lbf-", dir="/tmp"))
    pair = _pair(args, root)
    try:
        with LoopingClient(pair.vip) as client:
            trials = [_one_takeover(pair, client) for _ in range(args.trials)]
            gap = client.longest_gap()
    finally:
        pair.close()
        shutil.rmtree(root, ignore_errors=True)
    times = [t["takeover_s"] for t in trials]
    ready = [t["ready_s"] for t in trials]
    return {
        "trials": len(trials),
        "advert_interval_ms": args.advert_ms,
        "takeover_p50_s": round(statistics.median(times), 3),
        "takeover_max_s": round(max(times), 3),
        "takeover_s": [round(t, 3) for t in times],
        "vip_moved_s": [round(t["vip_moved_s"], 3) for t in trials],
        "failed_requests_per_takeover": [t["failed"] for t in trials],
        "longest_gap_s": round(gap, 3),
        "persistence_kept": sum(1 for t in trials if t["kept"]),
        "replacement_ready_p50_s": round(statistics.median(ready), 3),
        "replacement_ready_max_s": round(max(ready), 3),
    }


def soak(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="lbf-", dir="/tmp"))
    pair = _pair(args, root)
    burners: list[subprocess.Popen[bytes]] = []
    try:
        (master,) = pair.holders()
        (backup,) = [a for a in pair.live() if a != master]
        _wait(lambda: pair.entered(backup, AmphoraRole.BACKUP) > 0, 30)
        elected = sum(pair.entered(a, AmphoraRole.MASTER) for a in pair.live())
        for _ in range(os.cpu_count() or 1):
            burners.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        time.sleep(args.soak_seconds)
        spurious = sum(pair.entered(a, AmphoraRole.MASTER) for a in pair.live()) - elected
        holders = pair.holders()
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)
        pair.close()
        shutil.rmtree(root, ignore_errors=True)
    return {
        "seconds": args.soak_seconds,
        "cpu_burners": len(burners),
        "advert_interval_ms": args.advert_ms,
        "spurious_takeovers": spurious,
        "vip_holders_at_end": len(holders),
    }


MEASUREMENTS: dict[str, Measurement] = {
    "takeover": takeover,
    "soak": soak,
    "lab": lab_takeover,
    "host_loss": host_loss,
    "single": single_failover,
    "agent_create": agent_create,
}
#: Those that need no root (loopback agents).
UNPRIVILEGED = {"host_loss"}


def run_measurements(
    table: dict[str, Measurement], names: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    figures: dict[str, Any] = {"load_average_at_start": os.getloadavg()[0]}
    for name in names:
        figures[name] = table[name](args)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--soak-seconds", type=float, default=600.0)
    parser.add_argument("--advert-ms", type=int, default=100)
    parser.add_argument("--rt-priority", type=int, default=0, help="0: no realtime")
    parser.add_argument(
        "--lab-trials", type=int, default=1, help="partitions in the lab (<= 2: the breaker)"
    )
    parser.add_argument("--host-loss-trials", type=int, default=5)
    parser.add_argument("--load-balancers", type=int, default=6, help="host_loss's SINGLE LBs")
    parser.add_argument("--single-trials", type=int, default=5, help="single's trials")
    parser.add_argument("--spares", type=int, default=0, help="single: agent.spare_amphorae")
    parser.add_argument(
        "--refill-wait", type=float, default=3.0, help="single: seconds before each trial"
    )
    parser.add_argument("--agent-trials", type=int, default=10, help="agent_create's, each")
    parser.add_argument("--only", default=",".join(MEASUREMENTS))
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 takeovers, 5 s soak, 1 lab trial, 1 host loss, 2 single trials",
    )
    args = parser.parse_args()
    if args.quick:
        args.trials, args.soak_seconds, args.lab_trials = 2, 5.0, 1
    args.rt_priority = args.rt_priority or None
    names = [name for name in args.only.split(",") if name]
    unknown = sorted(set(names) - set(MEASUREMENTS))
    if unknown:
        parser.error(f"unknown measurement(s): {', '.join(unknown)}")
    if os.geteuid() != 0 and set(names) - UNPRIVILEGED:
        print("bench/failover.py needs root (network namespaces)", file=sys.stderr)
        return 2
    print(json.dumps(run_measurements(MEASUREMENTS, names, args), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
