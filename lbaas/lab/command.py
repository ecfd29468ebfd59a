"""``lbaas lab ...``: the lab's subcommands (the composition root passes the state dir)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lbaas.lab.base import LabError, LabExists
from lbaas.lab.lab import Lab

DEFAULT_NAME = "lab"


def add_arguments(lab: argparse.ArgumentParser) -> None:
    sub = lab.add_subparsers(dest="lab_command", required=True)
    up = sub.add_parser("up", help="build N simulated hosts and their networks")
    up.add_argument("--hosts", type=int, required=True)
    up.add_argument("--members", type=int, default=1, help="member networks (default 1)")
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


def _up(lab: Lab, hosts: int, members: int) -> None:
    try:
        lab.up(hosts, members)
    except LabExists:
        raise  # someone else's lab, or this one already up: leave it be
    except BaseException:
        lab.down()  # a CLI user gets nothing half-built (a crash is what down is for)
        raise


def run(args: argparse.Namespace, state_dir: Path) -> int:
    lab = Lab(getattr(args, "name", DEFAULT_NAME), state_dir)
    try:
        if args.lab_command == "up":
            _up(lab, args.hosts, args.members)
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
    print(json.dumps(lab.status(), indent=2, sort_keys=True))
    return 0
