"""The hosts registry's statements, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta

from lbaas.db.amphorae import amphora_repo
from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.model.enums import AmphoraStatus, HostStatus
from lbaas.model.fleet import HostAddress, HostAnnouncement, SilentHost

NOW = datetime(2026, 11, 25, 12, 0, 0)


def enrol(database: Database, host_id: str, zone: str = "nova", up_at: float | None = None) -> None:
    with database.write() as session:
        where = HostAddress(host_id, "127.0.0.1", 9000 + int(host_id[-1]))
        host_repo.enrol(session, where, zone=zone, capacity=2, now=NOW, up_at=up_at)


def seen(host_id: str, amphorae: tuple[str, ...] = ()) -> HostAnnouncement:
    return HostAnnouncement(host_id, "127.0.0.9", 9100, "nova", 5, amphorae)


def test_a_host_heartbeat_needs_an_enrolled_host_and_a_newer_stamp(database: Database) -> None:
    with database.write() as session:
        assert not host_repo.record_heartbeat(session, seen("host-1"), 1, 1, 100.0)
    enrol(database, "host-1")
    with database.read() as session:
        assert [h.status for h in host_repo.list_hosts(session)] == [HostStatus.DOWN]
    with database.write() as session:
        # a-1 is no live amphora of host-1: a stray for the cleaner
        assert host_repo.record_heartbeat(
            session, seen("host-1", ("a-1",)), 5, 2, 100.0
        ) == frozenset({"a-1"})
    with database.write() as session:  # a replay, at this or another health manager
        assert not host_repo.record_heartbeat(session, seen("host-1"), 5, 2, 101.0)
        assert not host_repo.record_heartbeat(session, seen("host-1"), 4, 9, 101.0)
    with database.read() as session:
        [host] = host_repo.list_hosts(session)
        reported = host_repo.reported_by_up_hosts(session)
    assert (host.status, host.address, host.port, host.capacity) == (
        HostStatus.UP,
        "127.0.0.9",
        9100,
        5,
    )
    assert host.last_heartbeat_at == 100.0
    assert reported == [(HostAddress("host-1", "127.0.0.9", 9100), ["a-1"])]


def test_silent_hosts_go_down_and_leave_placement(database: Database) -> None:
    enrol(database, "host-1", up_at=100.0)
    enrol(database, "host-2", up_at=200.0)
    enrol(database, "host-3", zone="b", up_at=200.0)
    with database.read() as session:
        silent = host_repo.silent_up_hosts(session, 150.0)
    assert silent == [SilentHost(HostAddress("host-1", "127.0.0.1", 9001), 100.0)]
    with database.write() as session:  # host-2 is not silent: only host-1 goes
        assert host_repo.mark_silent_down(session, ["host-1", "host-2"], 150.0) == ["host-1"]
    with database.write() as session:
        assert host_repo.mark_silent_down(session, ["host-1"], 150.0) == []  # idempotent
        assert host_repo.silent_up_hosts(session, 150.0) == []
        loads = host_repo.live_host_loads(session, "nova")
        every = host_repo.live_host_loads(session, None)
    assert [h.host_id for h in loads] == ["host-2"]
    assert [h.host_id for h in every] == ["host-2", "host-3"]


def test_load_counts_live_amphorae_and_misplaced_ones_are_found(database: Database) -> None:
    enrol(database, "host-1", up_at=100.0)
    enrol(database, "host-2", up_at=100.0)
    with database.write() as session:
        a = amphora_repo.create_amphora(session, "lb-1", "h", "127.0.0.5", NOW, compute_id="host-1")
        b = amphora_repo.create_amphora(session, "lb-2", "h", "127.0.0.6", NOW, compute_id="host-2")
        c = amphora_repo.create_amphora(session, "lb-3", "h", "127.0.0.7", NOW, compute_id="host-1")
        legacy = amphora_repo.create_amphora(session, "lb-4", "h", "127.0.0.8", NOW)
        ids = (a.id, b.id, c.id, legacy.id)
    with database.write() as session:
        amphora_repo.set_status(session, ids[2], AmphoraStatus.DELETED, NOW)
    with database.write() as session:
        loads = {h.host_id: h.amphorae for h in host_repo.live_host_loads(session, None)}
        misplaced = host_repo.misplaced_amphorae(session, "host-1", [*ids, "never-heard-of"])
        retired = host_repo.recent_retirements(session, "lb-3", NOW - timedelta(seconds=1))
        retired_later = host_repo.recent_retirements(session, "lb-3", NOW + timedelta(seconds=1))
    assert loads == {"host-1": 1, "host-2": 1}
    # host-1 runs its own live amphora and a legacy one (no host recorded): both kept.
    assert sorted(misplaced) == sorted([ids[1], ids[2], "never-heard-of"])
    assert (retired, retired_later) == (1, 0)


def test_a_host_heartbeat_names_the_amphorae_it_runs_that_are_not_live_on_it(
    database: Database,
) -> None:
    """A host back from a partition still runs the amphora failed over meanwhile: its
    heartbeat names it at once (the health manager then wakes the cleaner)."""
    enrol(database, "host-1", up_at=100.0)
    enrol(database, "host-2", up_at=100.0)
    with database.write() as session:
        kept = amphora_repo.create_amphora(
            session, "lb-1", "h", "127.0.0.5", NOW, compute_id="host-1"
        )
        retired = amphora_repo.create_amphora(
            session, "lb-2", "h", "127.0.0.6", NOW, compute_id="host-1"
        )
        moved = amphora_repo.create_amphora(
            session, "lb-3", "h", "127.0.0.7", NOW, compute_id="host-2"
        )
        ids = (kept.id, retired.id, moved.id)
    with database.write() as session:
        amphora_repo.set_status(session, ids[1], AmphoraStatus.DELETED, NOW)
    with database.write() as session:
        strays = host_repo.record_heartbeat(session, seen("host-1", (*ids, "unknown")), 1, 1, 200.0)
        calm = host_repo.record_heartbeat(session, seen("host-1", (ids[0],)), 1, 2, 201.0)
    assert strays == frozenset({ids[1], ids[2], "unknown"})
    assert calm == frozenset()
