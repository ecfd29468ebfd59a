"""``lbaas lab``'s command-line arguments, apart from what runs them (``lbaas.lab.command``):
every ``lbaas`` command builds the whole parser, and the lab's modules (its hosts, BIRD,
the tier) are about a fifth of what ``lbaas serve`` imported before it answered (py-spy
of a serve starting on a busy machine, issue 34).
"""

from __future__ import annotations

import argparse

DEFAULT_NAME = "lab"
#: SIGTERM's grace before SIGKILL in a rolling upgrade's restart (``lab restart``): a
#: worker finishes its running converges meanwhile.
STOP_GRACE = 15.0


def add_arguments(lab: argparse.ArgumentParser) -> None:
    sub = lab.add_subparsers(dest="lab_command", required=True)
    _up_arguments(sub)
    run_in = sub.add_parser(
        "exec",
        help="run a command inside one of the lab's namespaces (ctl: with OS_* set for the "
        "API; an instance by its name)",
    )
    run_in.add_argument("node", help="ctl, ctl2.., db, cli, rtr, h1, h2, ...")
    run_in.add_argument("argv", nargs=argparse.REMAINDER, help="-- command and arguments")
    verbs = _instance_arguments(sub)
    sub.add_parser("agent-restart", help="SIGKILL a host's agent and start it again").add_argument(
        "host", help="h1, h2, ..."
    )
    _upgrade_arguments(sub)
    sub.add_parser("down", help="remove every namespace, link and process of the lab")
    sub.add_parser("status", help="print the lab's hosts, namespaces and addresses as JSON")
    tier = sub.add_parser("tier", help="the L4 tier's nodes, leases, announced VIPs, BGP sessions")
    tier.add_argument(
        "--metrics", action="store_true", help="print it as Prometheus' text exposition instead"
    )
    for command, text in (
        (
            "host-down",
            "lose a host at one instant: its processes frozen, its links cut in one batch, "
            "then all SIGKILLed (prints how long it took as host_down)",
        ),
        (
            "host-shutdown",
            "stop a host gracefully, in order: its processes die one by one, then its "
            "links go down",
        ),
        ("partition", "cut a host off: its links go down"),
        ("heal", "bring a host's links back up"),
    ):
        hosts = "h1, h2, ... (host-down: also ctl, ctl2, ...)" if command == "host-down" else ""
        sub.add_parser(command, help=text).add_argument("host", help=hosts or "h1, h2, ...")
    for parser in (lab, *sub.choices.values(), *verbs):
        parser.add_argument("--name", default=argparse.SUPPRESS, help="lab name (default lab)")
        parser.add_argument("--state-dir", default=argparse.SUPPRESS, help="holds labs/<name>.json")


def _upgrade_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    code = "a source tree (``lbaas lab tree COMMIT`` prints one); '' or none: this code"
    tree = sub.add_parser("tree", help="extract a commit's source tree for --code; its path")
    tree.add_argument("commit")
    tree.add_argument("--repository", default=".", help="the git repository (default .)")
    restart = sub.add_parser(
        "restart",
        help="a rolling upgrade's step: stop one process (SIGTERM), start it from --code, "
        "wait until it serves (prints the seconds as restart_s)",
    )
    restart.add_argument("owner", help="h1, h2, ... (its agent) or ctl, ctl2, ...")
    restart.add_argument("part", help="agent (a host), or api, worker, health (a control host)")
    restart.add_argument("--code", default="", help=code)
    restart.add_argument(
        "--grace",
        type=float,
        default=STOP_GRACE,
        help=f"seconds from SIGTERM to SIGKILL (default {STOP_GRACE:g}; 0: SIGKILL at once)",
    )
    schema = sub.add_parser("db-upgrade", help="run lbaas db upgrade from --code on ctl")
    schema.add_argument("--code", default="", help=code)


def _up_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="build N simulated hosts and their networks")
    up.add_argument("--hosts", type=int, required=True)
    up.add_argument("--members", type=int, default=1, help="member networks (default 1)")
    up.add_argument(
        "--control",
        type=int,
        default=1,
        metavar="K",
        help="control-plane hosts ctl, ctl2… (default 1, on SQLite); K > 1: each runs api, "
        "worker and health against one PostgreSQL on a database host of its own",
    )
    up.add_argument(
        "--vip-prefix",
        type=int,
        default=24,
        metavar="N",
        help="the VIP network's prefix length, 16-24 (default 24: some 240 VIPs)",
    )
    up.add_argument(
        "--tier",
        type=int,
        default=0,
        metavar="K",
        help="an L4 tier: a BIRD router peered with hosts h1-hK, each with a lease agent, "
        "and the lease watcher; with services, distributed load balancers are served "
        "through it",
    )
    up.add_argument(
        "--tier-return",
        choices=("nat", "dsr"),
        default=None,
        help="how members answer the tier's distributed VIPs (tier.return_mode; default: "
        "the setting's); dsr needs members that hold the VIP on lo (lbaas.lab.tier_dsr)",
    )
    up.add_argument(
        "--network-only",
        action="store_true",
        help="build the namespaces and links only: no control plane, no agents",
    )
    up.add_argument(
        "--code",
        default="",
        help="run every process from this source tree (lbaas lab tree COMMIT), not this code",
    )
    up.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _instance_arguments(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> list[argparse.ArgumentParser]:
    instance = sub.add_parser("instance", help="instances: namespaces with a tenant port")
    verbs = instance.add_subparsers(dest="instance_command", required=True)
    add = verbs.add_parser("add", help="start an instance on a host, its port bound there")
    add.add_argument("--host", required=True, help="h1, h2, ...")
    add.add_argument("--network", required=True, help="tenant network name (made when new)")
    add.add_argument("--address", required=True, help="the port's IPv4 address")
    add.add_argument("--cidr", help="a new network's subnet (default: the address's /24)")
    add.add_argument("--instance", help="instance name (default <network>-<address>)")
    remove = verbs.add_parser("remove", help="delete an instance's port and namespace")
    remove.add_argument("instance")
    return [add, remove]
