"""A rolling upgrade in the lab while clients are served (issue 35; root).

    sudo python bench/upgrade.py [--hosts 3] [--control 3] [--per-topology 10]
                                 [--old 6824d05] [--new COMMIT] [--pause 0.01]
                                 [--agents-first]

A lab whose every process runs the old commit's tree (``lbaas lab tree``: ``git archive``
into /var/tmp/lbaas-lab-trees; same virtual environment), ``--per-topology`` SINGLE,
ACTIVE_STANDBY and distributed (kernel L4 on every host) load balancers made by the old
code, and clients (``tests.support.vip_client``): one in the lab's client namespace that
asks each VIP in turn, a request every ``--pause`` seconds on a new connection (0.5 s
timeout; a distributed VIP enters through its entry node), and one on each host asking
the distributed VIPs (balanced by that host's own rules), each as often. Then the
upgrade, one process at a time (``tests.support.rolling_upgrade``), control plane first
as Octavia does: the schema's expansion (``lbaas db upgrade --expand`` from the new tree); each
control host's api, worker and health (a create and an update after the first control
host); a create and an update through the old agents; each host's agent; the contraction
(``--contract``: its options, '' to leave it out). ``--agents-first``: the agents, a create and an
update, then the schema and the control plane. The creates and updates make and change a
SINGLE and, when there are any, a distributed load balancer. ``--new``: a commit;
default this working tree's code.

Prints JSON: per step its seconds, the longest time any VIP went unanswered (at best
the client's cycle, ``cycle_s``: every VIP asked once) and the failed requests, both per
provider too (``by_provider``), and when any failed, per client namespace and VIP
(``failed_by_route``); at the end how many load balancers are left PENDING and
how many are ACTIVE; the load average before and after. Nothing here asserts on time.
Target (issue 35): 0 failed requests, nothing PENDING, every load balancer ACTIVE.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.lab.arguments import STOP_GRACE  # noqa: E402
from lbaas.lab.upgrade import tree_from_git  # noqa: E402
from tests.support.lab_pair import lab_world  # noqa: E402
from tests.support.rolling_upgrade import (  # noqa: E402
    amphora_ids,
    create_load_balancers,
    final_statuses,
    keep_logs,
    run_steps,
    upgrade_steps,
    vip_clients,
)

#: The commit before issue 35's first change (0381ffc).
OLD = "6824d05"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=3, help="agent hosts (default 3)")
    parser.add_argument("--control", type=int, default=3, help="control hosts (default 3)")
    parser.add_argument(
        "--per-topology",
        type=int,
        default=10,
        help="SINGLE, ACTIVE_STANDBY and distributed each (10)",
    )
    parser.add_argument("--old", default=OLD, help=f"the commit upgraded from (default {OLD})")
    parser.add_argument("--new", default="", help="the commit upgraded to (default: this code)")
    parser.add_argument("--pause", type=float, default=0.01, help="between requests (0.01 s)")
    parser.add_argument("--timeout", type=float, default=0.5, help="per request (0.5 s)")
    parser.add_argument(
        "--realtime-client",
        action="store_true",
        help="run the clients at a real-time priority (chrt -f), so that a request fails "
        "only when the VIP did not answer in time, not when the client was not scheduled",
    )
    parser.add_argument(
        "--realtime-members",
        action="store_true",
        help="run the members (Python HTTP servers in the router namespace, shared by every "
        "VIP) at a real-time priority too: a request then fails only in lbaas's part",
    )
    parser.add_argument(
        "--contract",
        default="--contract",
        help="the schema's contraction: options of lbaas db upgrade (default '--contract'; "
        "'' leaves it out)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=STOP_GRACE,
        help=f"SIGTERM to SIGKILL per process (default {STOP_GRACE:g} s; 0: SIGKILL at once)",
    )
    order = parser.add_mutually_exclusive_group()
    order.add_argument(
        "--agents-first",
        dest="control_first",
        action="store_false",
        help="the agents before the schema and the control plane (new agents, old control)",
    )
    order.add_argument(
        "--control-first",
        dest="control_first",
        action="store_true",
        help="the schema and the control plane before the agents (the default)",
    )
    parser.set_defaults(control_first=True)
    parser.add_argument("--keep-logs", default="", help="copy the lab's logs here at the end")
    parser.add_argument("--name", default=f"up{uuid.uuid4().hex[:4]}", help="lab name prefix")
    return parser.parse_args()


def _failed_by_provider(steps: list[dict[str, Any]]) -> dict[str, int]:
    """Every step's failed requests, summed per provider."""
    total: dict[str, int] = {}
    for step in steps:
        for provider, failed in step.get("by_provider", {}).get("failed_requests", {}).items():
            total[provider] = total.get(provider, 0) + failed
    return total


def main() -> None:
    args = _arguments()
    old = str(tree_from_git(ROOT, args.old))
    new = str(tree_from_git(ROOT, args.new)) if args.new else ""
    load_before = os.getloadavg()
    directory = Path(tempfile.mkdtemp(prefix="up", dir="/tmp"))  # short: socket paths
    contract = shlex.split(args.contract) or None
    result: dict[str, Any] = {
        "old": args.old,
        "new": args.new or "working tree",
        "hosts": args.hosts,
        "control_hosts": args.control,
        "per_topology": args.per_topology,
        "grace_s": args.grace,
        "realtime_client": args.realtime_client,
        "realtime_members": args.realtime_members,
        "order": "control plane first" if args.control_first else "agents first",
    }
    try:
        with lab_world(
            directory,
            hosts=args.hosts,
            prefix=args.name[:4],
            control=args.control,
            code=old,
            realtime_members=args.realtime_members,
        ) as world:
            started = time.monotonic()
            made = create_load_balancers(world, args.per_topology, args.per_topology)
            result["build_s"] = round(time.monotonic() - started, 1)
            clients = vip_clients(world, made, args.pause, args.timeout, args.realtime_client)
            with clients as client:
                client.wait_answered()
                amphorae = amphora_ids(world)
                result["cycle_s"] = round(client.cycle, 3)
                steps = upgrade_steps(
                    world,
                    new,
                    made,
                    contract=contract,
                    grace=args.grace,
                    control_first=args.control_first,
                )
                result["steps"] = []
                for figures in run_steps(client, steps):
                    print(json.dumps(figures), file=sys.stderr, flush=True)
                    result["steps"].append(figures)
                result["failed_requests"] = sum(s["failed_requests"] for s in result["steps"])
                result["failed_by_provider"] = _failed_by_provider(result["steps"])
                result["requests"] = client.requests
                result["requests_by_provider"] = client.requests_by_provider()
            result |= final_statuses(world, made)
            # Failed over during the upgrade (a host silent past health.host_stale_after).
            result["amphorae_replaced"] = len(amphorae - amphora_ids(world))
            if args.keep_logs:
                keep_logs(world, Path(args.keep_logs))
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)
    result["load_average_before"] = [round(x, 2) for x in load_before]
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
