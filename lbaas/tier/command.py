"""``lbaas tier watch|status``: the L4 tier outside the lab (settings ``[tier]``)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from prometheus_client import generate_latest

from lbaas.config import TierSettings
from lbaas.tier.host.bird import BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.lease_store import SqliteLeaseStore
from lbaas.tier.metrics import tier_registry
from lbaas.tier.status import router_status


def add_arguments(tier: argparse.ArgumentParser) -> None:
    sub = tier.add_subparsers(dest="tier_command", required=True)
    sub.add_parser(
        "watch",
        help="the lease watcher: withdraw nodes that miss renewals and fail their health "
        "port; serve per-node metrics",
    )
    status = sub.add_parser(
        "status", help="the tier's nodes, leases, announced VIPs and BGP sessions (router's view)"
    )
    status.add_argument(
        "--metrics", action="store_true", help="print it as Prometheus' text exposition instead"
    )


def run(args: argparse.Namespace, tier: TierSettings) -> int:
    if not tier.nodes or not tier.lease_store or not tier.router_bird_socket:
        print(
            "lbaas tier: set tier.nodes, tier.lease_store and tier.router_bird_socket",
            file=sys.stderr,
        )
        return 2
    if args.tier_command == "watch":
        from lbaas.tier.watch_service import main

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        return main(tier)
    policy = LeasePolicy.from_settings(tier)
    store = SqliteLeaseStore(Path(tier.lease_store), tier.lease_store_timeout)
    router = BirdControl(Path(tier.router_bird_socket))

    def status() -> dict[str, object]:
        return router_status(router, store, tier.nodes, policy)

    if args.metrics:
        sys.stdout.write(generate_latest(tier_registry(status)).decode())
    else:
        print(json.dumps(status(), indent=2, sort_keys=True))
    return 0
