"""No false host loss under load: a lab whose hosts are all alive, the machine kept busy (root).

    sudo python bench/host_soak.py [--seconds 300] [--busy 8] [--lbs 6]

Issue 29 asks for host loss to be detected within seconds (``health.host_stale_after``,
2.5 s of 1 s heartbeats since the host-suspect probes) and, in the same breath, for a
healthy host under load never to be taken for lost. This bench measures the second half:
a 3-host lab (``tests.support.lab_pair.lab_world``) with ``--lbs`` SINGLE load balancers
served by a client every 10 ms, while ``--busy`` processes spin on the machine's cores
(each ``while True: pass``, at normal priority, as a noisy neighbour would). Counted over
``--seconds``, from the health manager's log: hosts marked DOWN, failovers requested and
agents found degraded (silent, data plane answering); from the client: failed requests.
Every count should be 0. Prints JSON with the machine's load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from host_loss import REQUEST_EVERY, REQUEST_TIMEOUT, PacedClient, _create_single  # noqa: E402

from lbaas.lab.services import control_dir  # noqa: E402
from tests.support.lab_pair import lab_world, vip_of  # noqa: E402

_MARKS = {
    "hosts_marked_down": "marked DOWN",
    "failovers_requested": "failover requested",
    "agents_degraded": "agent degraded, amphora not failed over",
}


def _log_counts(log: Path, offset: int) -> dict[str, int]:
    with log.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    return {name: text.count(mark) for name, mark in _MARKS.items()}


def _busy(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _soak(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    with lab_world(directory, hosts=3, prefix=args.name[:3]) as world:
        lbs = [_create_single(world, f"soak-{n}") for n in range(args.lbs)]
        log = control_dir(world.lab, 1) / "health.log"
        offset = log.stat().st_size
        clients = [
            PacedClient(
                vip_of(world, lb),
                namespace=world.lab.names.client,
                timeout=REQUEST_TIMEOUT,
                pause=REQUEST_EVERY * args.lbs,
            )
            for lb in lbs
        ]
        with ExitStack() as stack:
            for client in clients:
                stack.enter_context(client)
            spinners = _busy(args.busy)
            start = time.monotonic()
            try:
                time.sleep(args.seconds)
                load = os.getloadavg()
            finally:
                for spinner in spinners:
                    spinner.kill()
                    spinner.wait()
            end = time.monotonic()
        failed = sum(client.failed_between(start, end) for client in clients)
        requests = sum(len(list(client.attempts)) for client in clients)
        return {
            **_log_counts(log, offset),
            "requests": requests,
            "failed_requests": failed,
            "load_average_at_end": [round(x, 2) for x in load],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="soak length (300)")
    parser.add_argument("--busy", type=int, default=8, help="spinning processes (8)")
    parser.add_argument("--lbs", type=int, default=6, help="SINGLE load balancers (6)")
    parser.add_argument("--name", default=f"hs{uuid.uuid4().hex[:5]}", help="lab name prefix")
    args = parser.parse_args()
    load_before = os.getloadavg()
    directory = Path(tempfile.mkdtemp(prefix="hs", dir="/tmp"))  # short: socket paths
    try:
        figures = _soak(args, directory)
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)
    result = {
        "seconds": args.seconds,
        "busy_processes": args.busy,
        "load_balancers": args.lbs,
        "cpus": os.cpu_count(),
        **figures,
        "load_average_before": [round(x, 2) for x in load_before],
        "target": "0 hosts marked DOWN, 0 failovers, 0 failed requests",
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
