"""The dashboard shows each pool's health monitor and each listener's L7 policies with
their rules, and an amphora's host state (an amphora on a DOWN host is not healthy); a
page's stream sends the tree again when any of these moves."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update

from lbaas.dashboard.tracker import TopologyTracker
from lbaas.db.hosts import host_repo
from lbaas.db.tables import HostRow
from lbaas.model.fleet import HostAddress
from tests.api.test_amphorae import add_amphora
from tests.api.test_dashboard import _events
from tests.support.api_client import Api


def test_monitors_and_l7_policies_with_rules_are_in_the_tree(api: Api, plane: Any) -> None:
    lb = api.create_lb(name="web")
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"])
    bare = api.create_pool(lb["id"], name="bare")
    tracker = TopologyTracker(plane.database, "p-alpha")
    assert "topology" in _events(tracker.tick())
    monitor = api.create_healthmonitor(lb["id"], pool["id"])
    late = api.create_l7policy(lb["id"], listener["id"], position=2, action="REJECT")
    first = api.create_l7policy(
        lb["id"], listener["id"], position=1, action="REDIRECT_TO_POOL", redirect_pool_id=bare["id"]
    )
    rule = api.create_l7rule(lb["id"], first["id"], value="/api")
    # Not a row the stream patches: the whole tree again, with them.
    (tree,) = _events(tracker.tick())["topology"]
    pools = {p["id"]: p for p in tree["pools"]}
    shown = pools[pool["id"]]["healthmonitor"]
    assert (shown["id"], shown["type"], shown["delay"]) == (monitor["id"], "HTTP", monitor["delay"])
    assert pools[bare["id"]]["healthmonitor"] is None
    policies = tree["listeners"][0]["l7policies"]
    assert [p["id"] for p in policies] == [first["id"], late["id"]]  # by position
    assert policies[0]["redirect_pool_id"] == bare["id"]
    ((shown_rule,),) = [policies[0]["rules"]]
    assert (shown_rule["id"], shown_rule["type"], shown_rule["value"]) == (
        rule["id"],
        "PATH",
        "/api",
    )
    assert policies[1]["rules"] == []
    assert api.get("/dashboard/topology").json()["loadbalancers"] == [tree]
    assert api.as_("p-beta", "member").get("/dashboard/topology").json()["loadbalancers"] == []


def _enrol(plane: Any, host_id: str) -> None:
    with plane.database.write() as session:
        now = datetime.now(UTC).replace(tzinfo=None)
        where = HostAddress(host_id, "127.0.0.1", 9443)
        host_repo.enrol(session, where, zone="z", capacity=10, now=now, up_at=time.time())


def test_an_amphora_carries_its_hosts_state(api: Api, plane: Any) -> None:
    lb = api.create_lb(name="web")
    _enrol(plane, "host-a")
    on_host = add_amphora(plane, lb["id"], 0, host="host-a")
    nowhere = add_amphora(plane, lb["id"], 1)  # no host recorded
    tracker = TopologyTracker(plane.database, "p-alpha")
    (tree,) = _events(tracker.tick())["topology"]
    states = {a["id"]: (a["status"], a["host_status"]) for a in tree["amphorae"]}
    assert states == {on_host: ("ALLOCATED", "UP"), nowhere: ("ALLOCATED", None)}
    assert set(_events(tracker.tick())) == {"traffic"}
    with plane.database.write_connection() as conn:
        conn.execute(update(HostRow).where(HostRow.id == "host-a").values(status="DOWN"))
    (tree,) = _events(tracker.tick())["topology"]  # the host went down: sent at once
    states = {a["id"]: (a["status"], a["host_status"]) for a in tree["amphorae"]}
    assert states[on_host] == ("ALLOCATED", "DOWN")
