"""``lbaas lab ...``: the lab's subcommands (the composition root passes the state dir)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lbaas.lab import processes
from lbaas.lab.base import LabError, LabExists
from lbaas.lab.lab import Lab
from lbaas.lab.services import API_PORT, SETTINGS_FILE, services_status, start_services
from lbaas.progress import Progress

DEFAULT_NAME = "lab"


def add_arguments(lab: argparse.ArgumentParser) -> None:
    sub = lab.add_subparsers(dest="lab_command", required=True)
    up = sub.add_parser("up", help="build N simulated hosts and their networks")
    up.add_argument("--hosts", type=int, required=True)
    up.add_argument("--members", type=int, default=1, help="member networks (default 1)")
    up.add_argument(
        "--network-only",
        action="store_true",
        help="build the namespaces and links only: no control plane, no agents",
    )
    up.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    run_in = sub.add_parser(
        "exec",
        help="run a command inside one of the lab's namespaces (ctl: with OS_* set for the API)",
    )
    run_in.add_argument("node", help="ctl, cli, rtr, h1, h2, ...")
    run_in.add_argument("argv", nargs=argparse.REMAINDER, help="-- command and arguments")
    sub.add_parser("down", help="remove every namespace, link and process of the lab")
    sub.add_parser("status", help="print the lab's hosts, namespaces and addresses as JSON")
    for command, text in (
        ("host-down", "lose a host: its processes die, its links go down"),
        ("partition", "cut a host off: its links go down"),
        ("heal", "bring a host's links back up"),
    ):
        sub.add_parser(command, help=text).add_argument("host", help="h1, h2, ...")
    for parser in (lab, *sub.choices.values()):
        parser.add_argument("--name", default=argparse.SUPPRESS, help="lab name (default lab)")
        parser.add_argument("--state-dir", default=argparse.SUPPRESS, help="holds labs/<name>.json")


def _up(lab: Lab, hosts: int, members: int, *, services: bool, quiet: bool) -> None:
    # Named steps: the network's four plus one per host, then the services' four.
    progress = Progress("lab up", 4 + hosts + (4 if services else 0), quiet=quiet)
    try:
        lab.up(hosts, members, progress)
        if services:
            start_services(lab, progress)
        progress.finish()
    except LabExists:
        raise  # someone else's lab, or this one already up: leave it be
    except BaseException:
        lab.down()  # a CLI user gets nothing half-built (a crash is what down is for)
        raise


def run(args: argparse.Namespace, state_dir: Path) -> int:
    lab = Lab(getattr(args, "name", DEFAULT_NAME), state_dir)
    try:
        if args.lab_command == "up":
            _up(lab, args.hosts, args.members, services=not args.network_only, quiet=args.quiet)
        elif args.lab_command == "exec":
            return _exec(lab, args.node, args.argv)
        elif args.lab_command == "down":
            print(json.dumps({"removed": lab.down()}))
            return 0
        elif args.lab_command == "host-down":
            lab.host_down(args.host)
        elif args.lab_command == "partition":
            lab.partition(args.host)
        elif args.lab_command == "heal":
            lab.heal(args.host)
    except LabError as exc:
        print(f"lbaas lab: {exc}", file=sys.stderr)
        return 1
    status = lab.status()
    if status["up"] and any(status["hosts"][h]["processes"] for h in status["hosts"]):
        status["services"] = services_status(lab)
    print(json.dumps(status, indent=2, sort_keys=True))
    return 0


def _exec(lab: Lab, node: str, argv: list[str]) -> int:
    """Become ``argv`` inside ``node``'s namespace; in ctl the openstack CLI finds the API."""
    argv = argv[1:] if argv[:1] == ["--"] else argv
    if not argv:
        raise LabError("lbaas lab exec NODE -- COMMAND: no command given")
    state = lab.state()
    namespaces = {"ctl": lab.names.control, "cli": lab.names.client, "rtr": lab.names.router}
    namespaces |= {f"h{i}": lab.names.host(i) for i in range(1, state.hosts + 1)}
    if node not in namespaces:
        raise LabError(f"no node {node!r} in lab {lab.names.lab}: {', '.join(namespaces)}")
    env = {}
    if node == "ctl":
        env = {"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"http://127.0.0.1:{API_PORT}"}
        # ``lbaas host list`` (and any lbaas command) reads the control plane's settings.
        env["LBAAS_CONFIG"] = str(lab.services_dir / "ctl" / SETTINGS_FILE)
    processes.exec_in(namespaces[node], argv, env)
    return 0  # not reached: exec replaced this process
