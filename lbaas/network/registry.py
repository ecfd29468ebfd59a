"""Seeding the network registry: the loopback subnet and the subnets in the settings.

Runs at start-up (idempotently), so a fresh embedded install has a subnet to put VIPs on
without any setup, and operators can declare the subnets of their own networks.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime

from lbaas.config import NetworkSettings
from lbaas.db import network_repo
from lbaas.db.engine import Database


def seed_subnets(database: Database, settings: NetworkSettings) -> None:
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    declared = [
        (
            settings.loopback_subnet_id,
            settings.loopback_network_id,
            settings.loopback_subnet_cidr,
            "lbaas-loopback",
            None,
            None,
        ),
        *[(s.id, s.network_id, s.cidr, s.name, s.gateway_ip, s.mtu) for s in settings.subnets],
    ]
    with database.write() as session:
        for subnet_id, network_id, cidr, name, gateway, mtu in declared:
            network = ipaddress.ip_network(cidr, strict=False)
            network_repo.ensure_network(session, network_id, name, now, mtu)
            network_repo.ensure_subnet(
                session,
                subnet_id=subnet_id,
                network_id=network_id,
                cidr=str(network),
                ip_version=network.version,
                name=name,
                gateway_ip=gateway,
                now=now,
            )
