"""Amphorae (admin only): list and filters, show, delete in ERROR, failover, config, stats.

Nothing creates amphorae with the noop provider, so these tests insert amphora rows and
listener counters directly through ``plane.database.write()`` with the ``lbaas.db.tables``
classes, next to load balancers created through the API.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from lbaas.db.tables import AmphoraRow, ListenerStatsRow
from tests.api.resource_base import assert_fault
from tests.support.api_client import Api
from tests.support.control_plane import noop_of
from tests.support.waiting import wait_until

AMPHORAE = "/v2/octavia/amphorae"
FIELDS = {
    "id",
    "loadbalancer_id",
    "compute_id",
    "lb_network_ip",
    "vrrp_ip",
    "ha_ip",
    "vrrp_port_id",
    "ha_port_id",
    "cert_expiration",
    "cert_busy",
    "role",
    "status",
    "vrrp_interface",
    "vrrp_id",
    "vrrp_priority",
    "cached_zone",
    "created_at",
    "updated_at",
    "image_id",
    "compute_flavor",
}


def add_amphora(plane: Any, lb_id: str | None, n: int = 0, **fields: Any) -> str:
    """Insert one amphora row (the API has no create) and return its id."""
    amp_id = str(uuid.uuid4())
    values: dict[str, Any] = {
        "id": amp_id,
        "loadbalancer_id": lb_id,
        "status": "ALLOCATED",
        "role": "STANDALONE",
        "lb_network_ip": f"127.0.20.{n + 1}",
        "ha_ip": "127.0.10.5",
        "compute_id": f"host-{n}",
        "vrrp_id": 1,
        "vrrp_priority": 100,
        "cert_expiration": datetime(2030, 1, 2, 3, 4, 5),
        "failover_pending": False,
        "created_at": datetime(2024, 1, 1, 0, 0, n),
        **fields,
    }
    with plane.database.write() as session:
        session.add(AmphoraRow(**values))
    return amp_id


def add_counters(plane: Any, amp_id: str, lb_id: str, listener_id: str, **kw: Any) -> None:
    with plane.database.write() as session:
        session.add(
            ListenerStatsRow(
                amphora_id=amp_id, listener_id=listener_id, loadbalancer_id=lb_id, epoch=1, **kw
            )
        )


def test_list_show_and_fields(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    amp_id = add_amphora(plane, lb["id"])
    r = admin.get(AMPHORAE)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"amphorae", "amphorae_links"}
    (amp,) = body["amphorae"]
    assert set(amp) == FIELDS
    assert amp["id"] == amp_id and amp["loadbalancer_id"] == lb["id"]
    assert amp["cert_busy"] is False
    assert amp["image_id"] is None and amp["compute_flavor"] is None and amp["cached_zone"] is None
    assert amp["cert_expiration"] == "2030-01-02T03:04:05"
    assert amp["vrrp_priority"] == 100 and amp["role"] == "STANDALONE"
    assert admin.get(f"{AMPHORAE}/{amp_id}").json() == {"amphora": amp}
    only = admin.get(f"{AMPHORAE}/{amp_id}", params={"fields": ["id", "status"]}).json()
    assert only == {"amphora": {"id": amp_id, "status": "ALLOCATED"}}
    missing = str(uuid.uuid4())
    assert_fault(admin.get(f"{AMPHORAE}/{missing}"), 404, f"Amphora {missing} not found.")


def test_filters_pagination_and_deleted_hidden(api: Api, admin: Api, plane: Any) -> None:
    mine = api.create_lb()
    theirs = api.as_("p-beta", "member").create_lb()
    a = add_amphora(plane, mine["id"], 0, role="MASTER")
    b = add_amphora(plane, mine["id"], 1, role="BACKUP", status="ERROR")
    c = add_amphora(plane, theirs["id"], 2)
    add_amphora(plane, theirs["id"], 3, status="DELETED")

    def ids(**params: Any) -> list[str]:
        r = admin.get(AMPHORAE, params=params)
        assert r.status_code == 200, r.text
        return [o["id"] for o in r.json()["amphorae"]]

    assert ids() == [a, b, c]
    assert ids(loadbalancer_id=mine["id"]) == [a, b]
    assert ids(status="ERROR") == [b]
    assert ids(role="MASTER") == [a]
    assert ids(project_id="p-beta") == [c]
    assert ids(project_id="p-alpha", role="BACKUP") == [b]
    assert ids(project_id="p-nobody") == []
    assert ids(sort="lb_network_ip:desc") == [c, b, a]
    page = admin.get(AMPHORAE, params={"limit": 2}).json()
    assert [o["id"] for o in page["amphorae"]] == [a, b]
    (link,) = page["amphorae_links"]
    assert link["rel"] == "next"
    assert ids(marker=b) == [c]
    assert_fault(admin.get(AMPHORAE, params={"bogus": "x"}), 400, "duplicate or invalid")


def test_admin_only(api: Api, plane: Any) -> None:
    lb = api.create_lb()
    amp_id = add_amphora(plane, lb["id"])
    one = f"{AMPHORAE}/{amp_id}"
    for caller in (api, api.as_("p-alpha", "reader"), api.as_("p-alpha", "")):
        assert_fault(caller.get(AMPHORAE), 403, "Policy does not allow")
        assert_fault(caller.get(one), 403)
        assert_fault(caller.delete(one), 403)
        assert_fault(caller.put(f"{one}/failover"), 403)
        assert_fault(caller.put(f"{one}/config"), 403)
        assert_fault(caller.get(f"{one}/stats"), 403)


def test_delete_only_in_error(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    healthy = add_amphora(plane, lb["id"], 0)
    broken = add_amphora(plane, lb["id"], 1, status="ERROR")
    r = admin.delete(f"{AMPHORAE}/{healthy}")
    assert_fault(r, 409, f"amphora {healthy} is immutable and cannot be updated.")
    assert admin.delete(f"{AMPHORAE}/{broken}").status_code == 204
    assert_fault(admin.get(f"{AMPHORAE}/{broken}"), 404)
    assert [o["id"] for o in admin.get(AMPHORAE).json()["amphorae"]] == [healthy]
    assert_fault(admin.delete(f"{AMPHORAE}/{broken}"), 404)
    assert (
        api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]["provisioning_status"]
        == "ACTIVE"
    )


def test_failover_rebuilds_the_load_balancer(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    amp_id = add_amphora(plane, lb["id"])
    noop = noop_of(plane)
    noop.gate.clear()  # converges wait until reopened
    try:
        r = admin.put(f"{AMPHORAE}/{amp_id}/failover")
        assert r.status_code == 202 and r.content == b""
        shown = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
        assert shown["provisioning_status"] == "PENDING_UPDATE"
        again = admin.put(f"{AMPHORAE}/{amp_id}/failover")
        assert_fault(again, 409, f"Load Balancer {lb['id']} is immutable and cannot be updated.")
    finally:
        noop.gate.set()
    api.wait_lb(lb["id"])
    assert any(c.action == "rebuild" and c.loadbalancer_id == lb["id"] for c in noop.calls)
    spare = add_amphora(plane, None, 1)
    assert_fault(admin.put(f"{AMPHORAE}/{spare}/failover"), 409, "immutable")
    missing = str(uuid.uuid4())
    assert_fault(admin.put(f"{AMPHORAE}/{missing}/failover"), 404, f"Amphora {missing}")


def test_config_converges_without_status_change(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    amp_id = add_amphora(plane, lb["id"])
    noop = noop_of(plane)
    applies = sum(1 for c in noop.calls if c.loadbalancer_id == lb["id"])
    r = admin.put(f"{AMPHORAE}/{amp_id}/config")
    assert r.status_code == 202 and r.content == b""
    wait_until(lambda: sum(1 for c in noop.calls if c.loadbalancer_id == lb["id"]) > applies)
    assert noop.calls[-1].action == "apply"
    shown = api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
    assert shown["provisioning_status"] == "ACTIVE"
    spare = add_amphora(plane, None, 1)
    assert admin.put(f"{AMPHORAE}/{spare}/config").status_code == 202


def test_stats(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    amp_id = add_amphora(plane, lb["id"])
    path = f"{AMPHORAE}/{amp_id}/stats"
    assert_fault(admin.get(path), 404, f"Amphora stats for {amp_id} not found.")
    first, second = sorted(str(uuid.uuid4()) for _ in range(2))
    base = {"bytes_in": 100, "bytes_out": 200, "total_connections": 3, "request_errors": 1}
    last = {**{k: 1 for k in base}, "active_connections": 4}
    add_counters(plane, amp_id, lb["id"], second, base={}, last={"bytes_in": 5})
    add_counters(plane, amp_id, lb["id"], first, base={**base, "active_connections": 9}, last=last)
    r = admin.get(path)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "amphora_stats": [
            {
                "id": amp_id,
                "loadbalancer_id": lb["id"],
                "listener_id": first,
                "active_connections": 4,
                "bytes_in": 101,
                "bytes_out": 201,
                "request_errors": 2,
                "total_connections": 4,
            },
            {
                "id": amp_id,
                "loadbalancer_id": lb["id"],
                "listener_id": second,
                "active_connections": 0,
                "bytes_in": 5,
                "bytes_out": 0,
                "request_errors": 0,
                "total_connections": 0,
            },
        ]
    }
    # Octavia 19 looks no amphora up: an unknown id is the same 404 as an amphora
    # without records (recorded from its API: ``AmphoraStatsController.get``).
    missing = str(uuid.uuid4())
    r = admin.get(f"{AMPHORAE}/{missing}/stats")
    assert_fault(r, 404)
    assert r.json()["faultstring"] == f"Amphora stats for {missing} not found."


# Octavia 19.0.0's answers for an amphora in each status, without and then with one
# listener record, recorded from its own API (the functional-test app of
# ``octavia.tests.functional.api.v2.base.BaseAPITest``: noauth, noop driver, SQLite):
# 404 ``Amphora stats for <id> not found.`` without, 200 with, whatever the status;
# the amphora itself is 404 once DELETED, its statistics are not.
STATUSES = ("BOOTING", "ALLOCATED", "READY", "PENDING_CREATE", "PENDING_DELETE", "ERROR", "DELETED")


def test_stats_answer_as_octavias_in_every_amphora_status(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    for n, status in enumerate(STATUSES):
        amp_id = add_amphora(plane, lb["id"], n, status=status)
        path = f"{AMPHORAE}/{amp_id}/stats"
        assert_fault(admin.get(path), 404, f"Amphora stats for {amp_id} not found.")
        last = {"bytes_in": 1, "bytes_out": 2, "active_connections": 3}
        last |= {"total_connections": 4, "request_errors": 5}
        add_counters(plane, amp_id, lb["id"], listener["id"], base={}, last=last)
        r = admin.get(path)
        assert r.status_code == 200, (status, r.text)
        assert r.json() == {
            "amphora_stats": [
                {"id": amp_id, "loadbalancer_id": lb["id"], "listener_id": listener["id"], **last}
            ]
        }
        shown = admin.get(f"{AMPHORAE}/{amp_id}")
        assert shown.status_code == (404 if status == "DELETED" else 200), status


def test_the_health_managers_failover_request_wakes_the_workers(api: Api, plane: Any) -> None:
    from lbaas.health.sql_store import SqlHealthStore
    from lbaas.model.graph import AmphoraId
    from tests.support.wakes import WakeCounter

    lb = api.create_lb()
    api.wait_lb(lb["id"])
    amp_id = add_amphora(plane, lb["id"])
    wakes = WakeCounter()
    store = SqlHealthStore(plane.database, wakes)
    assert store.request_failover(AmphoraId(amp_id))
    assert wakes.count == 1
    # Already failing over: nothing new is committed, nobody is woken.
    assert not store.request_failover(AmphoraId(amp_id))
    assert wakes.count == 1
    api.wait_lb(lb["id"])


def test_stats_leave_out_pools_and_members(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    member = api.create_member(lb["id"], pool["id"])
    amp_id = add_amphora(plane, lb["id"])
    for object_id in (listener["id"], pool["id"], member["id"]):
        add_counters(plane, amp_id, lb["id"], object_id, base={}, last={"bytes_in": 3})
    r = admin.get(f"{AMPHORAE}/{amp_id}/stats")
    assert r.status_code == 200, r.text
    assert [s["listener_id"] for s in r.json()["amphora_stats"]] == [listener["id"]]
