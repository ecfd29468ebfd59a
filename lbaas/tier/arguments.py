"""``lbaas tier``'s command-line arguments, apart from what runs them (``lbaas.tier.command``,
which imports the coordination engines and BIRD's client): every ``lbaas`` command builds
the whole parser.
"""

from __future__ import annotations

import argparse


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
