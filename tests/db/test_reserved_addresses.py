"""A declared subnet's reserved addresses (the lab's hosts and router) are never handed out."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

from lbaas.config import NetworkSettings, SubnetDeclaration
from lbaas.db.engine import Database
from lbaas.errors import Conflict
from lbaas.network.allocation import VipRequest, allocate_vip
from lbaas.network.registry import seed_subnets


def test_reserved_addresses_are_skipped_and_seeding_twice_changes_nothing(
    database: Database,
) -> None:
    subnet = SubnetDeclaration(
        id=str(uuid.uuid4()),
        network_id=str(uuid.uuid4()),
        cidr="10.9.0.0/29",  # .1-.6
        gateway_ip="10.9.0.1",
        reserved_addresses=("10.9.0.2", "10.9.0.3", "10.9.0.5"),
    )
    settings = NetworkSettings(subnets=(subnet,))
    seed_subnets(database, settings)
    seed_subnets(database, settings)  # every process seeds at start-up
    now = datetime(2026, 1, 1)
    given = []
    with database.write() as session:
        for index in range(2):
            request = VipRequest(subnet_id=subnet.id)
            given.append(allocate_vip(session, request, f"lb-{index}", now).address)
    assert sorted(given) == ["10.9.0.4", "10.9.0.6"]
    with pytest.raises(Conflict), database.write() as session:
        allocate_vip(session, VipRequest(subnet_id=subnet.id), "lb-full", now)
