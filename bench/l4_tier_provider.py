"""The distributed provider's tier path: established connections surviving a node's loss, JSON.

    python bench/l4_tier_provider.py [--held N] [--modes dsr,nat]

Per return mode (``tier.return_mode``), a lab with services (``tests/e2e/lab/provider_tier``:
``lbaas lab up --hosts 3 --tier 3 --tier-return MODE``, a load balancer with provider
``distributed`` made through the API, two members in namespaces of their own on ``m0``):
the client holds ``--held`` established TCP connections (200), h2 is lost whole
(``host-down``), and once the router no longer routes the VIP to h2 each connection is asked
for an answer. Reports how many survive and how many had gone through h2 (its SYN counter:
the DSR table's, or the L4 engine's in NAT return). ``bench/l4_tier.py`` measures the same
on the lab's own tier wiring; this is the path a load balancer made through the API takes.
Root only; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "lab"))

from provider_tier import NODES, answers, build, hold, lab_cli, prepare  # noqa: E402

_WAIT = 30.0


def survival(mode: str, held: int) -> dict[str, Any]:
    servers: list[subprocess.Popen[bytes]] = []
    directory = Path(tempfile.mkdtemp(prefix="lab", dir="/tmp"))  # short: unix sockets
    built = prepare(directory, mode, servers, prefix="b")
    try:
        build(built)
        before = {index: built.flows(index) for index in NODES}
        connections = hold(built.lab.names.client, built.vip, held)
        through = {index: built.flows(index) - before[index] for index in NODES}
        lab_cli("host-down", "h2", *built.base)
        built.tier.wait_next_hops(built.vip, {1, 3}, _WAIT)
        survived = answers(connections)
        return {
            "established": held,
            "through_each_node": through,
            "through_the_dead_node": through[2],
            "survived": survived,
            "survived_share": round(survived / held, 3),
        }
    finally:
        lab_cli("down", *built.base)
        for server in servers:
            server.kill()
            server.wait()
        subprocess.run(["rm", "-rf", str(directory)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", type=int, default=200, help="established connections")
    parser.add_argument("--modes", default="dsr,nat", help="return modes, in order")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print(json.dumps({"skipped": "the lab needs root (network namespaces)"}))
        return
    results: dict[str, Any] = {mode: survival(mode, args.held) for mode in args.modes.split(",")}
    results["load_average_1m"] = round(os.getloadavg()[0], 1)
    results["uptime"] = subprocess.run(
        ["uptime"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
