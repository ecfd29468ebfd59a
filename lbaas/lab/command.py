"""``lbaas lab ...``: the lab's subcommands (the composition root passes the state dir)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from prometheus_client import generate_latest

from lbaas.config import TierSettings
from lbaas.host.commands import run_command
from lbaas.lab import processes
from lbaas.lab.arguments import DEFAULT_NAME
from lbaas.lab.base import LabError, LabExists
from lbaas.lab.instances import Instances
from lbaas.lab.lab import Lab
from lbaas.lab.leaders import leaders
from lbaas.lab.names import control_name
from lbaas.lab.netns import Netns
from lbaas.lab.services import (
    API_PORT,
    SETTINGS_FILE,
    control_dir,
    restart_agent,
    services_status,
    start_services,
)
from lbaas.lab.tier import LabTier
from lbaas.lab.tier_coordination import start_node_lease, tier_engine
from lbaas.lab.tier_status import tier_status
from lbaas.lab.tier_watch import start_watch
from lbaas.lab.upgrade import restart_with_code, tree_from_git, upgrade_schema
from lbaas.progress import Progress
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.metrics import tier_registry


def _instance(lab: Lab, args: argparse.Namespace) -> None:
    instances = Instances(lab, Netns(run_command))
    if args.instance_command == "add":
        record = instances.add(
            args.host, args.network, args.address, cidr=args.cidr, name=args.instance
        )
        print(json.dumps(record, indent=2, sort_keys=True))
    else:
        instances.remove(args.instance)


def _up(
    lab: Lab,
    hosts: int,
    members: int,
    *,
    services: bool,
    quiet: bool,
    tier: int = 0,
    settings: TierSettings | None = None,
    control: int = 1,
    code: str = "",
    vip_prefix: int = 24,
) -> None:
    if not 0 <= tier <= hosts:
        raise LabError(f"--tier {tier}: the tier's nodes are among the {hosts} hosts")
    # Named steps: the network's four plus one per host, then the services' four.
    progress = Progress("lab up", 4 + hosts + (4 if services else 0), quiet=quiet)
    try:
        lab.up(hosts, members, progress, control=control, vip_prefix=vip_prefix)
        if services:
            mode = (settings or TierSettings()).return_mode
            start_services(lab, progress, tier, mode, code=code)
        if tier:
            start_tier(lab, tier, settings)
        progress.finish()
    except LabExists:
        raise  # someone else's lab, or this one already up: leave it be
    except BaseException:
        lab.down()  # a CLI user gets nothing half-built (a crash is what down is for)
        raise


def start_tier(lab: Lab, nodes: int, settings: TierSettings | None = None) -> None:
    """A BIRD router peered with h1-hK (BFD on), a lease process on every node and the lease
    watcher (``lbaas tier watch``) in the router's namespace; the nodes announce what their
    lbaas agents are given (the distributed provider's VIPs), nothing without services.

    The leases live on a coordination engine every node reaches over the fabric (etcd on
    the control host, or the database host's PostgreSQL): a node cut off cannot renew, and
    fences itself (``lbaas.tier.node_lease``)."""
    settings = settings or TierSettings()
    tier = LabTier(lab, range(1, nodes + 1))
    tier.start()
    policy = LeasePolicy.from_settings(settings)
    engine = tier_engine(lab)
    for index in tier.nodes:
        start_node_lease(lab, index, policy, engine[1], engine[0], tier.nodes)
    start_watch(lab, range(1, nodes + 1), settings, engine)


def _tier(lab: Lab, metrics: bool) -> None:
    if metrics:
        text = generate_latest(tier_registry(lambda: tier_status(lab)))
        sys.stdout.write(text.decode())
    else:
        print(json.dumps(tier_status(lab), indent=2, sort_keys=True))


def run(args: argparse.Namespace, state_dir: Path, tier: TierSettings | None = None) -> int:
    lab = Lab(getattr(args, "name", DEFAULT_NAME), state_dir)
    tier = tier or TierSettings()
    if getattr(args, "tier_return", None):
        tier = tier.model_copy(update={"return_mode": args.tier_return})
    figures: dict[str, float | int] | None = None
    try:
        if args.lab_command == "up":
            _up(
                lab,
                args.hosts,
                args.members,
                services=not args.network_only,
                quiet=args.quiet,
                tier=args.tier,
                settings=tier,
                control=args.control,
                code=args.code,
                vip_prefix=args.vip_prefix,
            )
        elif args.lab_command == "tier":
            _tier(lab, args.metrics)
            return 0
        elif args.lab_command == "exec":
            return _exec(lab, args.node, args.argv)
        elif args.lab_command == "down":
            print(json.dumps({"removed": lab.down()}))
            return 0
        elif args.lab_command == "instance":
            _instance(lab, args)
            return 0
        elif args.lab_command in ("tree", "restart", "db-upgrade"):
            print(json.dumps(_upgrade(lab, args)))
            return 0
        elif args.lab_command == "agent-restart":
            restart_agent(lab, args.host)
        elif args.lab_command == "host-down":
            figures = lab.host_down(args.host).figures()
        elif args.lab_command == "host-shutdown":
            lab.host_shutdown(args.host)
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
        if lab.state().control > 1:
            status["leaders"] = _leaders(lab)
    if figures is not None:
        status["host_down"] = figures
    print(json.dumps(status, indent=2, sort_keys=True))
    return 0


def _upgrade(lab: Lab, args: argparse.Namespace) -> dict[str, str | float]:
    """``tree``, ``restart`` and ``db-upgrade``: a rolling upgrade's pieces."""
    if args.lab_command == "tree":
        return {"tree": str(tree_from_git(Path(args.repository), args.commit))}
    if args.lab_command == "restart":
        done = restart_with_code(lab, args.owner, args.part, args.code, grace=args.grace)
        return {
            "stop_s": round(done.stop_s, 3),
            "start_s": round(done.start_s, 3),
            "code": args.code,
        }
    return {"db_upgrade_s": round(upgrade_schema(lab, args.code), 3), "code": args.code}


def _leaders(lab: Lab) -> dict[str, object]:
    """Who leads each singleton loop (several control hosts), or why it is not known."""
    try:
        return dict(leaders(lab))
    except LabError as exc:
        return {"unknown": str(exc)}


def _exec(lab: Lab, node: str, argv: list[str]) -> int:
    """Become ``argv`` inside ``node``'s namespace; in ctl the openstack CLI finds the API."""
    argv = argv[1:] if argv[:1] == ["--"] else argv
    if not argv:
        raise LabError("lbaas lab exec NODE -- COMMAND: no command given")
    state = lab.state()
    controls = {control_name(i): i for i in range(1, state.control + 1)}
    namespaces = {name: lab.names.control_host(i) for name, i in controls.items()}
    namespaces |= {"cli": lab.names.client, "rtr": lab.names.router}
    if state.control > 1:
        namespaces["db"] = lab.names.database
    namespaces |= {f"h{i}": lab.names.host(i) for i in range(1, state.hosts + 1)}
    namespaces |= {name: record["namespace"] for name, record in state.instances.items()}
    if node not in namespaces:
        raise LabError(f"no node {node!r} in lab {lab.names.lab}: {', '.join(namespaces)}")
    env = {}
    if node in controls:
        env = {"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"http://127.0.0.1:{API_PORT}"}
        # ``lbaas host list`` (and any lbaas command) reads the control plane's settings.
        env["LBAAS_CONFIG"] = str(control_dir(lab, controls[node]) / SETTINGS_FILE)
    processes.exec_in(namespaces[node], argv, env)
    return 0  # not reached: exec replaced this process
