"""The cached per-object exposition writes exactly what the plain one writes, after
counters move, statuses change (stamped or not), and objects are deleted; and a member's
traffic shows in both."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update

from lbaas.db.tables import ListenerStatsRow, MemberRow
from lbaas.metrics.database import read_objects
from lbaas.metrics.object_cache import STATUS_REFRESH_SECONDS, ObjectExposition
from lbaas.metrics.object_text import object_text
from tests.support.api_client import Api
from tests.support.prometheus import Exposition


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(plane: Any, amphora: str, lb_id: str, object_id: str, **last: int) -> None:
    with plane.database.write() as session:
        row = session.get(ListenerStatsRow, (amphora, object_id))
        if row is None:
            row = ListenerStatsRow(
                amphora_id=amphora, listener_id=object_id, loadbalancer_id=lb_id, epoch=1
            )
            row.base = {"bytes_in": 100, "active_connections": 9}
            session.add(row)
        row.last = last


def test_the_cached_exposition_is_the_plain_one(api: Api, plane: Any) -> None:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    first = api.create_member(lb["id"], pool["id"], address="127.0.0.5")
    second = api.create_member(lb["id"], pool["id"], address="127.0.0.6")
    api.wait_lb(lb["id"])
    one, two = str(uuid.uuid4()), str(uuid.uuid4())
    record(plane, one, lb["id"], listener["id"], bytes_in=5, vip_probes=1, vip_answered=1)
    record(plane, two, lb["id"], listener["id"], bytes_in=7, active_connections=2)
    record(plane, one, lb["id"], pool["id"], total_connections=3, check_failures=1)
    record(plane, one, lb["id"], first["id"], total_connections=3, requests=3)
    clock = Clock()
    cached = ObjectExposition(plane.database, clock)

    def same() -> Exposition:
        text = cached.text()
        assert text == object_text(read_objects(plane.database))
        return Exposition(text)

    seen = same()
    assert seen.value("lbaas_member_connections_total", member_id=first["id"]) == 3
    assert seen.matching("lbaas_member_connections_total", member_id=second["id"]) == []
    assert seen.value("lbaas_listener_bytes_in_total", listener_id=listener["id"]) == 212
    assert same().value("lbaas_pool_check_failures_total", pool_id=pool["id"]) == 1  # kept
    record(plane, one, lb["id"], first["id"], total_connections=8, requests=8)
    record(plane, one, lb["id"], listener["id"], bytes_in=6, vip_probes=1, vip_answered=0)
    seen = same()
    assert seen.value("lbaas_member_requests_total", member_id=first["id"]) == 8
    assert seen.value("lbaas_listener_vip_probe_up", listener_id=listener["id"]) == 0
    # A status stamped as the health manager stamps it shows at once.
    stamped = datetime.now(UTC).replace(tzinfo=None)
    with plane.database.write() as session:
        session.execute(
            update(MemberRow)
            .where(MemberRow.id == second["id"])
            .values(operating_status="ERROR", updated_at=stamped)
        )
    seen = same()
    assert (
        seen.matching("lbaas_member_status", member_id=second["id"])[0][0]["operating_status"]
        == "ERROR"
    )
    # One written without a stamp shows once the statuses are due for a re-read.
    with plane.database.write() as session:
        session.execute(
            update(MemberRow)
            .where(MemberRow.id == second["id"])
            .values(operating_status="OFFLINE", updated_at=stamped)
        )
    clock.now += STATUS_REFRESH_SECONDS + 1
    seen = same()
    assert (
        seen.matching("lbaas_member_status", member_id=second["id"])[0][0]["operating_status"]
        == "OFFLINE"
    )
    # A deleted member takes its series (and its counter record) with it.
    assert api.delete(f"/v2/lbaas/pools/{pool['id']}/members/{first['id']}").status_code == 204
    api.wait_lb(lb["id"])
    seen = same()
    assert seen.matching("lbaas_member_connections_total", member_id=first["id"]) == []
    assert seen.matching("lbaas_member_status", member_id=first["id"]) == []
    with plane.database.read() as session:
        assert session.get(ListenerStatsRow, (one, first["id"])) is None
        assert session.get(ListenerStatsRow, (one, pool["id"])) is not None
