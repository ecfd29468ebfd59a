"""The per-object exposition is written by hand for speed: prometheus_client's parser must
read it back exactly, odd characters in a project id included."""

from __future__ import annotations

from lbaas.db.loadbalancers.object_statuses import ObjectFigures, ObjectStatus
from lbaas.metrics.object_text import object_text
from tests.support.prometheus import Exposition

ODD = 'p"roject\\with\nnewline'


def test_every_object_and_its_traffic_read_back() -> None:
    figures = ObjectFigures(
        loadbalancers=[ObjectStatus("lb1", "", ODD, "ACTIVE", "ONLINE")],
        listeners=[
            ObjectStatus("l1", "lb1", ODD, "ACTIVE", "ONLINE"),
            ObjectStatus("l2", "lb1", ODD, "ACTIVE", "OFFLINE"),
        ],
        pools=[ObjectStatus("p1", "lb1", ODD, "ACTIVE", "DEGRADED")],
        members=[ObjectStatus("m1", "p1", ODD, "ACTIVE", "ERROR")],
        listener_counters={
            "l1": {
                "bytes_in": 10,
                "bytes_out": 20,
                "active_connections": 1,
                "total_connections": 3,
                "request_errors": 0,
            },
            "l2": {
                "bytes_in": 5,
                "bytes_out": 7,
                "active_connections": 2,
                "total_connections": 4,
                "request_errors": 1,
            },
        },
    )
    seen = Exposition(object_text(figures))
    assert seen.value("lbaas_member_status", member_id="m1", pool_id="p1", project_id=ODD) == 1
    # Every per-object series can be selected by its load balancer, a member's too.
    assert seen.value("lbaas_member_status", member_id="m1", loadbalancer_id="lb1") == 1
    assert seen.matching("lbaas_member_status")[0][0]["operating_status"] == "ERROR"
    assert seen.value("lbaas_loadbalancer_status", loadbalancer_id="lb1") == 1
    assert seen.value("lbaas_listener_bytes_in_total", listener_id="l2") == 5
    assert seen.value("lbaas_loadbalancer_bytes_in_total", loadbalancer_id="lb1") == 15
    assert seen.value("lbaas_loadbalancer_active_connections", loadbalancer_id="lb1") == 3
    assert seen.value("lbaas_loadbalancer_request_errors_total", project_id=ODD) == 1
    assert seen.families["lbaas_listener_connections"] == "counter"
    assert seen.families["lbaas_pool_status"] == "gauge"


def test_the_vip_probe_is_up_if_any_amphora_answered_and_absent_if_none_probed() -> None:
    listeners = [ObjectStatus(lid, "lb1", "p", "ACTIVE", "ONLINE") for lid in ("l1", "l2", "l3")]
    figures = ObjectFigures(
        loadbalancers=[ObjectStatus("lb1", "", "p", "ACTIVE", "ONLINE")],
        listeners=listeners,
        pools=[],
        members=[],
        listener_counters={
            "l1": {"vip_probes": 2, "vip_answered": 1},  # ACTIVE_STANDBY: one reaches it
            "l2": {"vip_probes": 1, "vip_answered": 0},
            "l3": {"bytes_in": 4},  # an agent that does not probe
        },
    )
    seen = Exposition(object_text(figures))
    assert seen.families["lbaas_listener_vip_probe_up"] == "gauge"
    up = "lbaas_listener_vip_probe_up"
    assert seen.value(up, listener_id="l1", loadbalancer_id="lb1", project_id="p") == 1
    assert seen.value(up, listener_id="l2") == 0
    assert seen.matching(up, listener_id="l3") == []


def test_pools_and_members_with_a_record_have_traffic() -> None:
    figures = ObjectFigures(
        loadbalancers=[ObjectStatus("lb1", "", "p", "ACTIVE", "ONLINE")],
        listeners=[],
        pools=[
            ObjectStatus("p1", "lb1", "p", "ACTIVE", "ONLINE"),
            ObjectStatus("p2", "lb1", "p", "ACTIVE", "ONLINE"),
        ],
        members=[ObjectStatus("m1", "p1", "p", "ACTIVE", "ONLINE")],
        listener_counters={
            "p1": {"bytes_in": 9, "total_connections": 3, "check_failures": 2, "requests": 3},
            "m1": {"bytes_out": 11, "request_errors": 1, "check_failures": 2},
        },
    )
    seen = Exposition(object_text(figures))
    pool = {"pool_id": "p1", "loadbalancer_id": "lb1", "project_id": "p"}
    assert seen.value("lbaas_pool_bytes_in_total", **pool) == 9
    assert seen.value("lbaas_pool_connections_total", **pool) == 3
    assert seen.value("lbaas_pool_requests_total", **pool) == 3
    assert seen.value("lbaas_pool_check_failures_total", **pool) == 2
    member = {"member_id": "m1", "pool_id": "p1", "loadbalancer_id": "lb1", "project_id": "p"}
    assert seen.value("lbaas_member_bytes_out_total", **member) == 11
    assert seen.value("lbaas_member_request_errors_total", **member) == 1
    assert seen.value("lbaas_member_check_failures_total", **member) == 2
    assert seen.families["lbaas_member_active_connections"] == "gauge"
    assert seen.matching("lbaas_pool_bytes_in_total", pool_id="p2") == []  # no record
