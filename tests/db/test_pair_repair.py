"""A host coming UP queues the ACTIVE_STANDBY load balancers left with one amphora.

On SQLite and PostgreSQL: the half pair is found (not a whole pair, not a SINGLE load
balancer, not one in another state), and a heartbeat that turns a DOWN host UP queues
its converge, while the heartbeats of a host already UP queue nothing.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from lbaas.db.amphorae import amphora_repo
from lbaas.db.amphorae.pair_repair import half_pairs
from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.db.tables import ConvergeJobRow
from lbaas.model.enums import ProvisioningStatus
from lbaas.model.fleet import HostAddress, HostAnnouncement
from tests.db.rows import add_loadbalancer

NOW = datetime(2026, 11, 26, 2, 0, 0)


def add_lb(database: Database, lb_id: str, topology: str, amphorae: int, status: str) -> None:
    add_loadbalancer(
        database, lb_id, ProvisioningStatus(status), "amphora",
        topology=topology, vip_sg_ids=[], created_at=NOW,
    )  # fmt: skip
    with database.write() as session:
        for n in range(amphorae):
            amp = amphora_repo.create_amphora(session, lb_id, "h", f"10.0.0.{n}", NOW)
            amphora_repo.mark_serving(session, amp.id, NOW)


def queued(database: Database) -> list[str]:
    with database.read() as session:
        rows = session.scalars(
            select(ConvergeJobRow.loadbalancer_id).where(
                ConvergeJobRow.requested_gen > ConvergeJobRow.done_gen
            )
        )
        return sorted(rows)


def heartbeat(database: Database, sequence: int) -> None:
    seen = HostAnnouncement("host-2", "127.0.0.2", 9442, "nova", 10, ())
    with database.write() as session:
        assert (
            host_repo.record_heartbeat(session, seen, 1, sequence, 1000.0 + sequence) == frozenset()
        )


def test_a_host_coming_up_queues_the_half_pairs(database: Database) -> None:
    active = ProvisioningStatus.ACTIVE.value
    add_lb(database, "lb-half", "ACTIVE_STANDBY", 1, active)
    add_lb(database, "lb-whole", "ACTIVE_STANDBY", 2, active)
    add_lb(database, "lb-single", "SINGLE", 1, active)
    add_lb(database, "lb-busy", "ACTIVE_STANDBY", 1, ProvisioningStatus.PENDING_UPDATE.value)
    with database.read() as session:
        assert half_pairs(session) == ["lb-half"]
    with database.write() as session:
        where = HostAddress("host-2", "127.0.0.2", 9442)
        host_repo.enrol(session, where, zone="nova", capacity=10, now=NOW)  # DOWN until heard
    assert queued(database) == []
    heartbeat(database, 1)
    assert queued(database) == ["lb-half"]
    with database.write() as session:  # the converge ran (settled) meanwhile
        for job in session.scalars(select(ConvergeJobRow)):
            job.done_gen = job.requested_gen
    heartbeat(database, 2)  # already UP: nothing more
    assert queued(database) == []
