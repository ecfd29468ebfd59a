"""Two creates searching for a VIP address at once, in one process, pick different ones;
several processes search a large subnet from different places.

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
from lbaas.network import allocation
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


def _seeded(database: Database, cidr: str, gateway: str) -> SubnetDeclaration:
    subnet = SubnetDeclaration(
        id=str(uuid.uuid4()), network_id=str(uuid.uuid4()), cidr=cidr, gateway_ip=gateway
    )
    seed_subnets(database, NetworkSettings(subnets=(subnet,)))
    return subnet


def _next_free(database: Database, subnet_id: str) -> str | None:
    with database.read() as session:
        row = network_repo.get_subnet(session, subnet_id)
        assert row is not None
        return free_address(session, row)


def test_processes_start_their_searches_of_a_large_subnet_apart(database: Database) -> None:
    """Each API process searches a /20 or larger from a random place: three control hosts
    starting at its first address kept choosing the same ones (bench/scale.py --lab)."""
    subnet = _seeded(database, "10.9.0.0/20", "10.9.0.1")
    firsts = []
    for _ in range(3):
        allocation._next_index.pop(subnet.id, None)  # what a new process knows
        allocation._pending.pop(subnet.id, None)
        firsts.append(_next_free(database, subnet.id))
    assert firsts != ["10.9.0.2"] * 3  # all three at the start: (1/4094)**3 by chance
    small = _seeded(database, "10.10.0.0/24", "10.10.0.1")
    assert _next_free(database, small.id) == "10.10.0.2"  # small subnets keep their order


def test_a_search_follows_the_subnet_round_its_end(database: Database) -> None:
    """Past the last address the next search starts at the first and the hint follows it
    there, instead of staying at the end (each later search would read every address taken
    since the start again)."""
    subnet = _seeded(database, "10.11.0.0/20", "10.11.0.1")
    count = 4094  # usable addresses, indexes 0 (10.11.0.1, the gateway) to 4093
    allocation._next_index[subnet.id] = count - 1  # as a process whose hint reached the end
    picked = [_next_free(database, subnet.id) for _ in range(3)]
    assert picked == ["10.11.15.254", "10.11.0.2", "10.11.0.3"]
    assert allocation._next_index[subnet.id] == 3  # just past 10.11.0.3
