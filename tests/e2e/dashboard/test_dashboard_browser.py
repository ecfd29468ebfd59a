"""The dashboard in Debian's Chromium: what a caller sees, live updates without a reload,
actions through the API's own routes and RBAC. Screenshots go to each test's tmp dir.

The control plane runs the noop provider (no data plane): a member's health is changed in
the database, where the health manager would write it, and a drain is checked in the API
and the database (the weight an HAProxy would be given); the amphora row is written by the
test, as the amphora provider would write it.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import update

from lbaas.db.hosts import host_repo
from lbaas.db.tables import (
    AmphoraRow,
    ConvergeJobRow,
    HostRow,
    ListenerStatsRow,
    LoadBalancerRow,
    MemberRow,
)
from lbaas.model.enums import AmphoraRole, AmphoraStatus, OperatingStatus, ProvisioningStatus
from lbaas.model.fleet import HostAddress
from tests.e2e.dashboard.conftest import Pages
from tests.support.api_client import Api
from tests.support.waiting import wait_until

RED = "rgb(253, 232, 232)"  # the background of a member in ERROR or OFFLINE (dashboard.css)


@pytest.fixture(scope="module")
def tree(api: Api, plane: Any) -> dict[str, Any]:
    lb = api.create_lb(name="web")
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    first = api.create_member(lb["id"], pool["id"], address="127.0.0.5", weight=3)
    second = api.create_member(lb["id"], pool["id"], address="127.0.0.6", weight=2)
    amphora_id = str(uuid.uuid4())
    with plane.database.write() as session:
        session.add(
            AmphoraRow(
                id=amphora_id,
                loadbalancer_id=lb["id"],
                status=AmphoraStatus.ALLOCATED.value,
                role=AmphoraRole.STANDALONE.value,
                host="host-a",
                compute_id="netns:amp-1",
                created_at=datetime.now(UTC).replace(tzinfo=None),
            )
        )
    return {
        "lb": lb,
        "listener": listener,
        "pool": pool,
        "members": [first, second],
        "amphora": amphora_id,
    }


def _member_weight(api: Api, tree: dict[str, Any], member: dict[str, Any]) -> int:
    r = api.get(f"/v2/lbaas/pools/{tree['pool']['id']}/members/{member['id']}")
    return int(r.json()["member"]["weight"])


def _count_connections(plane: Any, tree: dict[str, Any], total: int) -> None:
    """The listener's counters as the health manager folds them from heartbeats."""
    with plane.database.write() as session:
        key = (tree["amphora"], tree["listener"]["id"])
        row = session.get(ListenerStatsRow, key)
        if row is None:
            row = ListenerStatsRow(
                amphora_id=key[0], listener_id=key[1], loadbalancer_id=tree["lb"]["id"]
            )
            row.epoch, row.base = 1, {}
            session.add(row)
        row.last = {"total_connections": total, "active_connections": 1}


def _graph_peak(page: Any, listener_id: str) -> float:
    """The highest rate (connections/s) the listener's graph drew."""
    peak = page.get_attribute(f"canvas[data-listener='{listener_id}']", "data-peak")
    return float(peak or 0)


def test_the_page_shows_the_callers_tree(pages: Pages, tree: dict[str, Any], plane: Any) -> None:
    page = pages.open("p-alpha", "member")
    section = page.locator(f"section.lb[data-id='{tree['lb']['id']}']")
    section.wait_for()
    assert page.locator("section.lb").count() == 1
    assert "web" in section.locator("h2").inner_text()
    assert section.locator("tr.member").count() == 2
    assert section.locator("canvas.traffic").count() == 1
    amphora = section.locator(f"tr.amphora[data-id='{tree['amphora']}']")
    assert "host-a" in amphora.inner_text() and "netns:amp-1" in amphora.inner_text()
    page.locator("#live[data-state='live']").wait_for()
    # Connections counted over a few ticks of the stream draw the listener's graph.
    for total in (10, 40, 55, 120, 150):
        _count_connections(plane, tree, total)
        time.sleep(0.3)
    # 140 connections in about 1.5 s: whatever the ticks, some interval ran above 20/s.
    wait_until(lambda: _graph_peak(page, tree["listener"]["id"]) > 20, 10, "the traffic graph")
    assert pages.shot(page, "dashboard").stat().st_size > 0


def test_another_project_sees_none_of_them(pages: Pages, tree: dict[str, Any]) -> None:
    page = pages.open("p-beta", "member")
    page.locator("p.empty").wait_for()
    assert page.locator("section.lb").count() == 0
    assert tree["lb"]["id"] not in page.content()
    pages.shot(page, "other-project")


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def test_a_member_turns_red_and_an_error_shows_without_a_reload(
    pages: Pages, tree: dict[str, Any], plane: Any
) -> None:
    page = pages.open("p-alpha", "reader")
    member = tree["members"][1]
    row = page.locator(f"tr.member[data-id='{member['id']}']")
    row.wait_for()
    page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
    assert row.evaluate("r => getComputedStyle(r).backgroundColor") != RED
    error = "agent on host-a refused the configuration"
    # Stamped as the health manager and the worker stamp their writes: the stream reads
    # only rows whose updated_at moved.
    with plane.database.write() as session:
        session.execute(
            update(MemberRow)
            .where(MemberRow.id == member["id"])
            .values(operating_status=OperatingStatus.ERROR.value, updated_at=_now())
        )
        job = session.get(ConvergeJobRow, tree["lb"]["id"])
        assert job is not None
        job.last_error, job.updated_at = error, time.time()
    page.locator(f"tr.member[data-id='{member['id']}'][data-operating-status='ERROR']").wait_for()
    assert row.evaluate("r => getComputedStyle(r).backgroundColor") == RED
    assert error in page.locator("section.lb .error").inner_text()
    assert page.evaluate("window.loadedOnce") is True
    pages.shot(page, "member-in-error")
    with plane.database.write() as session:  # put it back for the other tests
        session.execute(
            update(MemberRow)
            .where(MemberRow.id == member["id"])
            .values(operating_status=OperatingStatus.ONLINE.value, updated_at=_now())
        )
        session.execute(
            update(ConvergeJobRow)
            .where(ConvergeJobRow.loadbalancer_id == tree["lb"]["id"])
            .values(last_error=None, updated_at=time.time())
        )


def test_a_drain_from_the_page_sets_the_weight_through_the_api(
    pages: Pages, tree: dict[str, Any], api: Api, plane: Any
) -> None:
    page = pages.open("p-alpha", "member")
    member = tree["members"][0]
    row = page.locator(f"tr.member[data-id='{member['id']}']")
    row.locator("button.drain").click()
    page.locator("#notice.ok").wait_for()
    api.wait_lb(tree["lb"]["id"])
    assert _member_weight(api, tree, member) == 0
    # The page shows it by the event stream, with the button turned into Re-enable.
    page.locator(f"tr.member[data-id='{member['id']}'][data-weight='0']").wait_for()
    pages.shot(page, "drained")
    row.locator("button.enable").click()
    wait_until(lambda: _member_weight(api, tree, member) == 3, 15, "weight 3 restored")
    page.locator(f"tr.member[data-id='{member['id']}'][data-weight='3']").wait_for()
    api.wait_lb(tree["lb"]["id"])


def test_a_readers_actions_are_refused(pages: Pages, tree: dict[str, Any], api: Api) -> None:
    page = pages.open("p-alpha", "reader")
    member = tree["members"][0]
    page.locator(f"tr.member[data-id='{member['id']}'] button.drain").click()
    notice = page.locator("#notice")
    notice.wait_for()
    assert "Refused (403)" in notice.inner_text()
    page.locator(f"section.lb[data-id='{tree['lb']['id']}'] button.failover").click()
    page.wait_for_function("document.getElementById('notice').textContent.includes('403')")
    time.sleep(0.3)  # a write that slipped through would now be PENDING_UPDATE
    lb = api.get(f"/v2/lbaas/loadbalancers/{tree['lb']['id']}").json()["loadbalancer"]
    assert lb["provisioning_status"] == ProvisioningStatus.ACTIVE.value
    assert _member_weight(api, tree, member) == 3
    pages.shot(page, "reader-refused")


def _converges_done(plane: Any, lb_id: str) -> int:
    with plane.database.read() as session:
        job = session.get(ConvergeJobRow, lb_id)
        assert job is not None
        return int(job.done_gen)


def test_failover_is_for_admins_as_in_the_api(
    pages: Pages, tree: dict[str, Any], api: Api, plane: Any
) -> None:
    lb_id = tree["lb"]["id"]
    member = pages.open("p-alpha", "member")
    member.locator(f"section.lb[data-id='{lb_id}'] button.failover").click()
    member.wait_for_function("document.getElementById('notice').textContent.includes('403')")
    before = _converges_done(plane, lb_id)
    admin = pages.open("p-admin", "admin")
    admin.locator(f"section.lb[data-id='{lb_id}'] button.failover").click()
    admin.locator("#notice.ok").wait_for()
    assert "Failover of web requested" in admin.locator("#notice").inner_text()
    # The failover is a rebuild converge of the load balancer: one more run, settled.
    wait_until(lambda: _converges_done(plane, lb_id) > before, 15, "the failover converge")
    api.wait_lb(lb_id)
    with plane.database.read() as session:
        row = session.get(LoadBalancerRow, lb_id)
        assert row is not None and row.provisioning_status == ProvisioningStatus.ACTIVE.value


def _probe_result(plane: Any, tree: dict[str, Any], answered: bool) -> None:
    """The agent's VIP probe result as the health manager keeps it from a heartbeat."""
    _count_connections(plane, tree, 150)
    with plane.database.write() as session:
        row = session.get(ListenerStatsRow, (tree["amphora"], tree["listener"]["id"]))
        assert row is not None
        row.last = {**row.last, "vip_probes": 1, "vip_answered": int(answered)}


def test_a_vip_that_stops_answering_is_marked_without_a_reload(
    pages: Pages, tree: dict[str, Any], plane: Any
) -> None:
    listener_id = tree["listener"]["id"]
    _probe_result(plane, tree, answered=True)
    page = pages.open("p-alpha", "reader")
    block = f"div.listener[data-id='{listener_id}']"
    page.locator(f"{block}[data-vip='up']").wait_for()
    page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
    _probe_result(plane, tree, answered=False)
    marker = page.locator(f"{block}[data-vip='down'] .vip-probe")
    marker.wait_for()
    assert marker.inner_text() == "VIP not answering"
    # The members are untouched: only the VIP hop is shown broken.
    for member in tree["members"]:
        row = page.locator(f"tr.member[data-id='{member['id']}']")
        assert row.evaluate("r => getComputedStyle(r).backgroundColor") != RED
    assert page.evaluate("window.loadedOnce") is True
    pages.shot(page, "vip-not-answering")
    _probe_result(plane, tree, answered=True)
    page.locator(f"{block}[data-vip='up']").wait_for()
    assert page.evaluate("window.loadedOnce") is True


def test_headers_monitors_policies_and_a_host_down(
    pages: Pages, tree: dict[str, Any], api: Api, plane: Any
) -> None:
    lb_id = tree["lb"]["id"]
    api.create_healthmonitor(lb_id, tree["pool"]["id"])
    policy = api.create_l7policy(lb_id, tree["listener"]["id"], name="block-admin")
    api.create_l7rule(lb_id, policy["id"], value="/admin")
    with plane.database.write() as session:
        now = datetime.now(UTC).replace(tzinfo=None)
        where = HostAddress("host-a", "127.0.0.1", 9443)
        host_repo.enrol(session, where, zone="z", capacity=4, now=now, up_at=time.time())
    page = pages.open("p-alpha", "member")
    section = page.locator(f"section.lb[data-id='{lb_id}']")
    section.wait_for()
    heads = section.locator("table.members th").all_inner_texts()
    assert heads == ["Member", "Address", "Weight", "Status", "Action"]
    assert "HTTP" in section.locator("p.monitor").inner_text()
    assert "block-admin" in section.locator("li.l7policy").inner_text()
    assert 'PATH STARTS_WITH "/admin"' in section.locator("li.l7rule").inner_text()
    amphora = f"tr.amphora[data-id='{tree['amphora']}']"
    page.locator(f"{amphora}[data-health='ok'][data-host-status='UP']").wait_for()
    with plane.database.write_connection() as conn:
        conn.execute(update(HostRow).where(HostRow.id == "host-a").values(status="DOWN"))
    # Live, without a reload: the amphora is drawn amber with its host's state.
    row = page.locator(f"{amphora}[data-health='host-down']")
    row.wait_for()
    assert "HOST_DOWN" in row.inner_text()
    assert row.evaluate("r => getComputedStyle(r).backgroundColor") == "rgb(255, 243, 214)"
    pages.shot(page, "amphora-host-down")
