"""Seeding the network registry: the loopback subnet and the subnets in the settings.

Runs at start-up (idempotently), so a fresh embedded install has a subnet to put VIPs on
without any setup, and operators can declare the subnets of their own networks. A declared
subnet's ``reserved_addresses`` (hosts and routers that share the network, as the lab's are)
are recorded as ports owned by ``lbaas:reserved``, so no VIP or amphora leg is given one.
"""

from __future__ import annotations

import ipaddress
import uuid
from datetime import UTC, datetime

from lbaas.config import NetworkSettings
from lbaas.db.engine import Database
from lbaas.db.network import network_repo
from lbaas.db.session import Session
from lbaas.db.tables import PortRow

RESERVED_OWNER = "lbaas:reserved"


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
        for declaration in settings.subnets:
            for address in declaration.reserved_addresses:
                _reserve(session, declaration.id, declaration.network_id, address, now)


def _reserve(
    session: Session, subnet_id: str, network_id: str, address: str, now: datetime
) -> None:
    # A name-based id: seeding again finds the same port (the unique address decides anyway).
    port_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"lbaas:reserved/{subnet_id}/{address}"))
    network_repo.try_reserve_port(
        session,
        PortRow(
            id=port_id,
            network_id=network_id,
            subnet_id=subnet_id,
            ip_address=address,
            device_owner=RESERVED_OWNER,
            device_id="",
            created_at=now,
        ),
    )
