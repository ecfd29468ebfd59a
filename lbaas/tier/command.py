"""``lbaas tier watch|status``: the L4 tier outside the lab (settings ``[tier]``).

The nodes' leases are read from the SQLite file ``tier.lease_store`` when it is set, else
from the coordination engine ``[coordination]`` names (PostgreSQL or etcd: the nodes run
``lbaas.tier.node_lease``)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from prometheus_client import generate_latest

from lbaas.config import Settings
from lbaas.coordination.base import Coordinator
from lbaas.coordination.engines import open_coordinator
from lbaas.tier.coordinated_leases import CoordinatedLeaseReader
from lbaas.tier.host.bird import BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.lease_store import LeaseReader, SqliteLeaseStore
from lbaas.tier.metrics import tier_registry
from lbaas.tier.status import router_status


def tier_coordinator(settings: Settings) -> Coordinator | None:
    """The engine holding the nodes' leases; None for the SQLite file (``tier.lease_store``).

    ValueError when neither is set (the embedded engine is one process's: no node can
    renew into it) or the engine's settings are unusable."""
    if settings.tier.lease_store:
        return None
    if settings.coordination.engine == "embedded":
        raise ValueError(
            "set tier.lease_store, or coordination.engine = postgresql or etcd for the leases"
        )
    return open_coordinator(settings.coordination, settings.database_url)


def run(args: argparse.Namespace, settings: Settings) -> int:
    tier = settings.tier
    try:
        if not tier.nodes or not tier.router_bird_socket:
            raise ValueError("set tier.nodes and tier.router_bird_socket")
        coordinator = tier_coordinator(settings)
    except ValueError as exc:
        print(f"lbaas tier: {exc}", file=sys.stderr)
        return 2
    if args.tier_command == "watch":
        from lbaas.tier.watch_service import main

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        return main(tier, coordinator)
    policy = LeasePolicy.from_settings(tier)
    store: LeaseReader = (
        SqliteLeaseStore(Path(tier.lease_store), tier.lease_store_timeout)
        if coordinator is None
        else CoordinatedLeaseReader(coordinator, policy.lifetime)
    )
    router = BirdControl(Path(tier.router_bird_socket))

    def status() -> dict[str, object]:
        return router_status(router, store, tier.nodes, policy)

    if args.metrics:
        sys.stdout.write(generate_latest(tier_registry(status)).decode())
    else:
        print(json.dumps(status(), indent=2, sort_keys=True))
    return 0
