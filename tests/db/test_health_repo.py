"""The health manager's per-heartbeat statements, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from lbaas.db import health_repo
from lbaas.db.engine import Database
from lbaas.db.tables import AmphoraRow


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
        for amp_id, status in (("amp-live", "ALLOCATED"), ("amp-gone", "DELETED")):
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
