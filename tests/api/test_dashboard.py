"""The dashboard's data routes follow the load balancer list's scoping, on both databases;
the page's files are served; a page's stream sends the whole tree once (and after a create
or delete), then only the objects that changed."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update

from lbaas.dashboard.stream import dashboard_events
from lbaas.dashboard.tracker import TopologyTracker
from lbaas.db.tables import ConvergeJobRow, MemberRow, table_of
from tests.support.api_client import Api


def _tree(api: Api) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    lb = api.create_lb(name="web")
    api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"])
    member = api.create_member(lb["id"], pool["id"], address="127.0.0.5", weight=3)
    return lb, pool, member


def test_a_project_sees_its_own_tree_and_nothing_else(api: Api, plane: Any) -> None:
    lb, pool, member = _tree(api)
    api.as_("p-beta", "member").create_lb(name="other")
    shown = api.get("/dashboard/topology").json()["loadbalancers"]
    assert [x["id"] for x in shown] == [lb["id"]]
    (tree,) = shown
    assert [p["id"] for p in tree["pools"]] == [pool["id"]]
    (row,) = tree["pools"][0]["members"]
    assert (row["id"], row["weight"], row["address"]) == (member["id"], 3, "127.0.0.5")
    assert tree["listeners"][0]["protocol_port"] == 80
    assert tree["error"] is None and tree["amphorae"] == []
    assert api.as_("p-alpha", "reader").get("/dashboard/topology").json() == {
        "loadbalancers": shown,
        "listeners": {},
    }
    assert [
        x["name"]
        for x in api.as_("p-gamma", "member").get("/dashboard/topology").json()["loadbalancers"]
    ] == []
    everyone = api.as_("p-admin", "admin").get("/dashboard/topology").json()["loadbalancers"]
    assert sorted(x["name"] for x in everyone) == ["other", "web"]


def test_a_caller_without_a_reader_role_is_refused(api: Api) -> None:
    for path in ("/dashboard/topology", "/dashboard/events"):
        r = api.as_("p-alpha", "").get(path)
        assert r.status_code == 403, r.text
        assert "faultstring" in r.json()


def test_the_converge_error_and_member_status_come_from_the_database(api: Api, plane: Any) -> None:
    lb, _, member = _tree(api)
    with plane.database.write() as session:
        session.execute(update(MemberRow).values(operating_status="ERROR"))
        job = session.get(ConvergeJobRow, lb["id"])
        assert job is not None
        job.last_error = "agent 10.0.0.7 refused the configuration"
    (tree,) = api.get("/dashboard/topology").json()["loadbalancers"]
    assert tree["error"] == "agent 10.0.0.7 refused the configuration"
    assert tree["pools"][0]["members"][0]["operating_status"] == "ERROR"


def test_the_page_and_its_files_are_served(api: Api) -> None:
    page = api.get("/dashboard", headers={"Accept": "text/html"})  # as a browser asks
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/dashboard/static/dashboard.js" in page.text
    script = api.get("/dashboard/static/dashboard.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "EventSource" in script.text
    assert api.get("/dashboard/static/missing.js").status_code == 404
    assert api.get("/dashboard/static/__init__.py").status_code == 404
    # The API's own routes still answer 406 to a client that refuses JSON.
    assert api.get("/v2/lbaas/loadbalancers", headers={"Accept": "text/html"}).status_code == 406


def _collect(ticks_messages: list[list[str]]) -> list[str]:
    reads = iter(ticks_messages)
    ticks = len(ticks_messages)

    async def disconnected() -> bool:
        nonlocal ticks
        ticks -= 1
        return ticks < 0

    async def run() -> list[str]:
        stream = dashboard_events(lambda: next(reads), disconnected, 0.001, 60)
        return [message async for message in stream]

    return asyncio.run(run())


def test_the_stream_sends_each_ticks_messages_in_order() -> None:
    messages = _collect([["a\n\n", "b\n\n"], [], ["c\n\n"]])
    assert messages == ["retry: 1000\n\n", "a\n\n", "b\n\n", "c\n\n"]


def test_the_stream_ends_after_its_lifetime() -> None:
    async def never() -> bool:
        return False

    async def run() -> list[str]:
        stream = dashboard_events(lambda: ["event: traffic\ndata: {}\n\n"], never, 0.01, 0.05)
        return [message async for message in stream]

    messages = asyncio.run(run())
    assert messages[0].startswith("retry:") and 2 <= len(messages) < 30


def _events(messages: list[str]) -> dict[str, Any]:
    found = {}
    for message in messages:
        head, data = message.split("\n", 1)
        found[head.removeprefix("event: ")] = json.loads(data.removeprefix("data: "))
    return found


def _set_member(plane: Any, member_id: str, **values: Any) -> None:
    members = table_of(MemberRow)
    with plane.database.write_connection() as conn:
        stamp = {"updated_at": datetime.now(UTC).replace(tzinfo=None)}
        conn.execute(update(members).where(members.c.id == member_id).values(**values, **stamp))


def test_the_tracker_sends_the_tree_once_then_only_what_changed(api: Api, plane: Any) -> None:
    lb, pool, member = _tree(api)
    tracker = TopologyTracker(plane.database, "p-alpha")
    first = _events(tracker.tick())
    assert [x["id"] for x in first["topology"]] == [lb["id"]] and "traffic" in first
    assert set(_events(tracker.tick())) == {"traffic"}  # nothing moved: no tree
    _set_member(plane, member["id"], operating_status="ERROR")
    changes = _events(tracker.tick())["changes"]
    assert list(changes) == ["members"]
    (row,) = changes["members"]
    assert (row["id"], row["operating_status"], row["weight"]) == (member["id"], "ERROR", 3)
    assert set(_events(tracker.tick())) == {"traffic"}  # sent once, not again
    other = TopologyTracker(plane.database, "p-beta")  # another project's page sees none of it
    assert _events(other.tick())["topology"] == []
    _set_member(plane, member["id"], operating_status="ONLINE")
    assert set(_events(other.tick())) == {"traffic"}
    api.create_member(lb["id"], pool["id"], address="127.0.0.6")  # a create: the whole tree
    tree = _events(tracker.tick())["topology"]
    assert len(tree[0]["pools"][0]["members"]) == 2


def test_the_tracker_sends_a_converge_error_as_a_change(api: Api, plane: Any) -> None:
    lb, _, _ = _tree(api)
    tracker = TopologyTracker(plane.database, None)
    tracker.tick()
    with plane.database.write() as session:
        job = session.get(ConvergeJobRow, lb["id"])
        assert job is not None
        job.last_error, job.updated_at = "agent refused", time.time()
    assert _events(tracker.tick())["changes"] == {"errors": {lb["id"]: "agent refused"}}
