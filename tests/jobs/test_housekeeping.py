"""Housekeeping: DELETED records older than the retention are purged, nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, text

from lbaas.db.housekeeping import Purged
from lbaas.db.tables import AmphoraRow, ConvergeJobRow, LoadBalancerRow
from tests.support.api_client import LOOPBACK_SUBNET, Api

LB = "/v2/lbaas/loadbalancers"


def _lb(plane: Any, api: Api, *, delete: bool) -> str:
    lb_id = str(
        api.post(LB, {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}).json()["loadbalancer"][
            "id"
        ]
    )
    while plane.worker.run_once():
        pass
    if delete:
        assert api.delete(f"{LB}/{lb_id}").status_code == 204
        while plane.worker.run_once():
            pass
    return lb_id


def _backdate(plane: Any, table: str, row_id: str, days: int) -> None:
    when = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=days)
    with plane.database.write() as session:
        session.execute(
            text(f"UPDATE {table} SET updated_at = :when WHERE id = :id"),
            {"when": when, "id": row_id},
        )


def _ids(plane: Any, column: Any) -> set[str]:
    with plane.database.read() as session:
        return set(session.scalars(select(column)))


def test_only_expired_deleted_records_are_purged(idle_plane: Any, idle_api: Api) -> None:
    plane = idle_plane
    old_deleted = _lb(plane, idle_api, delete=True)
    new_deleted = _lb(plane, idle_api, delete=True)
    old_active = _lb(plane, idle_api, delete=False)
    _backdate(plane, "load_balancers", old_deleted, days=8)
    _backdate(plane, "load_balancers", old_active, days=8)
    now = datetime.now(UTC).replace(tzinfo=None)
    with plane.database.write() as session:
        for amp_id, status, age in (
            ("amp-old", "DELETED", 8),
            ("amp-new", "DELETED", 1),
            ("amp-live", "ALLOCATED", 8),
        ):
            session.add(
                AmphoraRow(
                    id=amp_id,
                    loadbalancer_id=old_active,
                    status=status,
                    created_at=now - timedelta(days=age),
                    updated_at=now - timedelta(days=age),
                )
            )
    assert idle_api.get(f"{LB}/{old_deleted}").status_code == 404  # invisible already

    purged = plane.worker.purge_expired()  # retention: a week (the default)

    assert (purged.loadbalancers, purged.amphorae) == (1, 1)
    assert _ids(plane, LoadBalancerRow.id) == {new_deleted, old_active}
    assert old_deleted not in _ids(plane, ConvergeJobRow.loadbalancer_id)
    assert {new_deleted, old_active} <= _ids(plane, ConvergeJobRow.loadbalancer_id)
    assert _ids(plane, AmphoraRow.id) == {"amp-new", "amp-live"}
    # The survivors still work: the active one can be changed and converges.
    assert idle_api.put(f"{LB}/{old_active}", {"loadbalancer": {"name": "x"}}).status_code == 200
    assert plane.worker.run_once()
    assert plane.worker.purge_expired() == Purged(0, 0)


def test_a_deleted_load_balancer_with_work_in_flight_waits(idle_plane: Any, idle_api: Api) -> None:
    plane = idle_plane
    lb_id = _lb(plane, idle_api, delete=True)
    _backdate(plane, "load_balancers", lb_id, days=30)
    with plane.database.write() as session:
        job = session.get(ConvergeJobRow, lb_id)
        assert job is not None
        job.requested_gen = job.done_gen + 1  # as if a converge were still asked for
    assert plane.worker.purge_expired().loadbalancers == 0
    assert lb_id in _ids(plane, LoadBalancerRow.id)
