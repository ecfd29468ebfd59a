"""The health manager's per-heartbeat statements, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lbaas.db.amphorae import amphora_repo
from lbaas.db.engine import Database
from lbaas.db.health import health_repo
from lbaas.db.jobs import job_queue
from lbaas.db.tables import AmphoraRow
from lbaas.model.enums import AmphoraStatus, ProvisioningStatus
from tests.db.rows import add_loadbalancer


def test_counters_are_inserted_then_replaced(database: Database) -> None:
    with database.write() as session:
        assert health_repo.lock_counters(session, "amp-1") == []
        health_repo.put_counters(
            session, "amp-1", "lb-1", "li-1", 1, {"bytes_in": 5}, {"bytes_in": 7}
        )
    with database.write() as session:
        health_repo.put_counters(
            session, "amp-1", "lb-1", "li-1", 2, {"bytes_in": 9}, {"bytes_in": 1}
        )
        health_repo.put_counters(session, "amp-1", "lb-1", "li-2", 1, {}, {"bytes_out": 3})
    with database.write() as session:
        rows = sorted(tuple(r) for r in health_repo.lock_counters(session, "amp-1"))
        assert health_repo.lock_counters(session, "amp-2") == []
    assert rows == [
        ("li-1", 2, {"bytes_in": 9}, {"bytes_in": 1}),
        ("li-2", 1, {}, {"bytes_out": 3}),
    ]


def test_a_heartbeat_is_recorded_only_for_a_known_amphora_and_never_goes_back(
    database: Database,
) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    with database.write() as session:
        for amp_id, status in (
            ("amp-live", AmphoraStatus.ALLOCATED.value),
            ("amp-gone", AmphoraStatus.DELETED.value),
        ):
            session.add(
                AmphoraRow(id=amp_id, loadbalancer_id="lb-1", status=status, created_at=now)
            )

    def record(amp_id: str, lb_id: str, at: float) -> bool:
        with database.write() as session:
            return health_repo.record_heartbeat(session, amp_id, lb_id, at)

    def last_heard() -> float | None:
        with database.read() as session:
            row = session.get(AmphoraRow, "amp-live")
            assert row is not None
            return row.last_heartbeat_at

    assert record("amp-live", "lb-1", 100.0)
    assert last_heard() == 100.0
    assert record("amp-live", "lb-1", 90.0)  # a late datagram: known, but not older
    assert last_heard() == 100.0
    assert record("amp-live", "lb-1", 110.0)
    assert last_heard() == 110.0
    assert not record("amp-live", "lb-other", 120.0)  # not this load balancer's amphora
    assert not record("amp-gone", "lb-1", 120.0)
    assert not record("amp-unknown", "lb-1", 120.0)
    assert last_heard() == 110.0


def test_batched_liveness_and_assignments(database: Database) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    with database.write() as session:
        for amp_id, lb_id, status in (
            ("amp-a", "lb-1", AmphoraStatus.ALLOCATED),
            ("amp-b", "lb-2", AmphoraStatus.ALLOCATED),
            ("amp-gone", "lb-1", AmphoraStatus.DELETED),
        ):
            session.add(
                AmphoraRow(id=amp_id, loadbalancer_id=lb_id, status=status.value, created_at=now)
            )
    with database.write_connection() as conn:
        assert health_repo.amphora_assignments(conn, ["amp-a", "amp-b", "amp-gone", "x"]) == {
            "amp-a": "lb-1",
            "amp-b": "lb-2",
        }
        health_repo.record_heartbeats(conn, [("amp-a", "lb-1"), ("amp-gone", "lb-1")], 70.0)
        health_repo.record_heartbeats(conn, [("amp-b", "lb-2"), ("amp-a", "lb-9")], 50.0)
    with database.write_connection() as conn:
        health_repo.record_heartbeats(conn, [("amp-a", "lb-1")], 60.0)  # never back
    with database.read() as session:
        heard = {a: t for a, _, t, _, _ in health_repo.heartbeating_amphorae(session)}
    assert heard == {"amp-a": 70.0, "amp-b": 50.0}


def test_counter_rows_in_batches(database: Database) -> None:
    def row(amp: str, listener: str, epoch: int, bytes_in: int) -> dict[str, Any]:
        base = {"bytes_in": 0}
        return {"amphora_id": amp, "listener_id": listener, "loadbalancer_id": "lb-1",
                "epoch": epoch, "base": base, "last": {"bytes_in": bytes_in}}  # fmt: skip

    with database.write_connection() as conn:
        assert health_repo.lock_counters_of(conn, ["amp-1"]) == []
        health_repo.put_counter_rows(conn, [row("amp-1", "li-1", 1, 5), row("amp-2", "li-1", 1, 6)])
    with database.write_connection() as conn:
        health_repo.put_counter_rows(conn, [row("amp-1", "li-1", 2, 7), row("amp-1", "li-2", 1, 8)])
        locked = [tuple(r) for r in health_repo.lock_counters_of(conn, ["amp-1", "amp-2"])]
    assert locked == [
        ("amp-1", "li-1", 2, {"bytes_in": 0}, {"bytes_in": 7}),
        ("amp-1", "li-2", 1, {"bytes_in": 0}, {"bytes_in": 8}),
        ("amp-2", "li-1", 1, {"bytes_in": 0}, {"bytes_in": 6}),
    ]


def test_versions_and_the_settled_check_follow_the_converge_generation(
    database: Database,
) -> None:
    add_loadbalancer(database, "lb-1", ProvisioningStatus.ACTIVE)
    add_loadbalancer(database, "lb-2", ProvisioningStatus.PENDING_UPDATE)
    with database.write() as session:
        job_queue.enqueue_converge(session, "lb-1", 1.0, new=True)
    with database.read_connection() as conn:
        versions = health_repo.loadbalancer_versions(conn, ["lb-1", "lb-2", "lb-missing"])
    assert versions == {
        "lb-1": (ProvisioningStatus.ACTIVE.value, 1),
        "lb-2": (ProvisioningStatus.PENDING_UPDATE.value, -1),
    }
    with database.write() as session:
        assert health_repo.loadbalancer_is_settled_at(session, "lb-1", 1)
        assert not health_repo.loadbalancer_is_settled_at(session, "lb-2", -1)
        job_queue.enqueue_converge(session, "lb-1", 2.0)
    with database.write() as session:
        assert not health_repo.loadbalancer_is_settled_at(session, "lb-1", 1)
        assert health_repo.loadbalancer_is_settled_at(session, "lb-1", 2)


def test_a_serving_amphora_never_heard_from_is_silent_from_when_it_began_to_serve(
    database: Database,
) -> None:
    """A host cut off between a new amphora's start and its first heartbeat: the amphora
    is still expected to heartbeat (it used to be left out of failover for good), from
    the time it was put into service; one still being built is not."""
    built = datetime(2026, 11, 26, 5, 0, 0)
    with database.write() as session:
        session.add(AmphoraRow(id="amp-new", loadbalancer_id="lb-1", created_at=built,
                               status=AmphoraStatus.PENDING_CREATE.value))  # fmt: skip
        session.add(AmphoraRow(id="amp-building", loadbalancer_id="lb-1", created_at=built,
                               status=AmphoraStatus.PENDING_CREATE.value))  # fmt: skip
    with database.read() as session:
        assert health_repo.heartbeating_amphorae(session) == []
    with database.write() as session:
        amphora_repo.mark_serving(session, "amp-new", built + timedelta(seconds=7))
    with database.read() as session:
        listed = health_repo.heartbeating_amphorae(session)
    serving = (built + timedelta(seconds=7)).replace(tzinfo=UTC).timestamp()
    assert listed == [("amp-new", "lb-1", serving, None, None)]
    # A later converge of its load balancer finds it serving already: nothing moves (the
    # write also waited on the health managers' locks on the row).
    with database.write() as session:
        amphora_repo.mark_serving(session, "amp-new", built + timedelta(seconds=60))
    with database.read() as session:
        assert health_repo.heartbeating_amphorae(session) == listed
