"""Two creates searching for a VIP address at once, in one process, pick different ones.

Before the fix both started at the same hint and chose the same free address; the second
create's INSERT then waited for the first create's whole transaction before failing and
trying again (bench/scale.py: 88 ms per port INSERT on average with 50 clients). The two
searches are made to overlap with a barrier in SQLAlchemy's own statement hook: each reads
the addresses in use only once the other is at the same point.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from sqlalchemy import event

from lbaas.config import NetworkSettings, SubnetDeclaration
from lbaas.db.engine import Database
from lbaas.db.network import network_repo
from lbaas.network.allocation import free_address
from lbaas.network.registry import seed_subnets


def test_overlapping_searches_pick_different_addresses(database: Database) -> None:
    subnet = SubnetDeclaration(
        id=str(uuid.uuid4()), network_id=str(uuid.uuid4()), cidr="10.8.0.0/24",
        gateway_ip="10.8.0.1",
    )  # fmt: skip
    seed_subnets(database, NetworkSettings(subnets=(subnet,)))
    both_reading = threading.Barrier(2, timeout=10)
    waited: set[int] = set()

    def meet(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # The first read of the ports in each thread waits for the other thread's.
        if "FROM ports" in statement and threading.get_ident() not in waited:
            waited.add(threading.get_ident())
            both_reading.wait()

    chosen: list[str | None] = []

    def search() -> None:
        with database.read() as session:
            row = network_repo.get_subnet(session, subnet.id)
            assert row is not None
            chosen.append(free_address(session, row))

    event.listen(database.engine, "before_cursor_execute", meet)
    try:
        threads = [threading.Thread(target=search) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        event.remove(database.engine, "before_cursor_execute", meet)
    assert len(waited) == 2, "the two searches did not overlap"
    assert None not in chosen and len(chosen) == 2
    assert chosen[0] != chosen[1], chosen
