"""The heartbeat payload: what agents send, and what the health manager refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lbaas.errors import HeartbeatRejected
from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from lbaas.wire.heartbeat.report_codec import from_payload, to_payload

REPORT = HealthReport(
    loadbalancer_id=LoadBalancerId("lb-1"),
    listeners={
        ListenerId("l-1"): ListenerHealth(
            ListenerState.FULL,
            ListenerCounters(
                bytes_in=1,
                bytes_out=2,
                active_connections=3,
                total_connections=4,
                request_errors=5,
                requests=6,
            ),
        ),
        ListenerId("l-2"): ListenerHealth(ListenerState.DOWN, vip_up=False),
    },
    pools={
        PoolId("p-1"): PoolHealth(
            PoolState.UP,
            {MemberId("m-1"): MemberState.DRAIN, MemberId("m-2"): MemberState.NO_CHECK},
        ),
        PoolId("p-2"): PoolHealth(PoolState.DOWN),
    },
)


def test_payload_has_the_documented_shape() -> None:
    assert to_payload(REPORT, "amp-1") == {
        "amphora_id": "amp-1",
        "loadbalancer_id": "lb-1",
        "listeners": {
            "l-1": {
                "state": "FULL",
                "counters": {
                    "bytes_in": 1,
                    "bytes_out": 2,
                    "active_connections": 3,
                    "total_connections": 4,
                    "request_errors": 5,
                    "requests": 6,
                },
            },
            "l-2": {
                "state": "DOWN",
                "counters": {
                    "bytes_in": 0,
                    "bytes_out": 0,
                    "active_connections": 0,
                    "total_connections": 0,
                    "request_errors": 0,
                    "requests": 0,
                },
                "vip_up": False,
            },
        },
        "pools": {
            "p-1": {"state": "UP", "members": {"m-1": "DRAIN", "m-2": "NO_CHECK"}},
            "p-2": {"state": "DOWN", "members": {}},
        },
    }


def test_an_older_agents_counters_without_requests_count_zero() -> None:
    wire = json.loads(json.dumps(to_payload(REPORT, "amp-1")))
    del wire["listeners"]["l-1"]["counters"]["requests"]
    _, report = from_payload(wire)
    counters = report.listeners[ListenerId("l-1")].counters
    assert (counters.requests, counters.request_errors) == (0, 5)


def test_the_vip_probe_travels_as_vip_up_and_only_when_probed() -> None:
    wire = to_payload(REPORT, "amp-1")
    assert wire["listeners"]["l-2"]["vip_up"] is False
    assert "vip_up" not in wire["listeners"]["l-1"]  # not probed: nothing said
    # The gauges the health manager makes from it never travel in the counters.
    assert "vip_probes" not in wire["listeners"]["l-2"]["counters"]


def test_an_older_agents_heartbeat_without_vip_up_decodes_as_not_probed() -> None:
    older = {
        "amphora_id": "amp-1",
        "loadbalancer_id": "lb-1",
        "listeners": {
            "l-1": {
                "state": "OPEN",
                "counters": {
                    "bytes_in": 1,
                    "bytes_out": 2,
                    "active_connections": 0,
                    "total_connections": 4,
                    "request_errors": 0,
                    "requests": 3,
                },
            }
        },
    }
    _, report = from_payload(older)
    health = report.listeners[ListenerId("l-1")]
    assert health.vip_up is None
    assert health.counters == ListenerCounters(
        bytes_in=1, bytes_out=2, total_connections=4, requests=3
    )


def test_round_trip_through_json() -> None:
    wire = json.loads(json.dumps(to_payload(REPORT, "amp-1")))
    assert from_payload(wire) == ("amp-1", REPORT)


def test_empty_sections_and_counters_may_be_left_out() -> None:
    amphora_id, report = from_payload(
        {"amphora_id": "a", "loadbalancer_id": "lb", "listeners": {"l": {"state": "OPEN"}}}
    )
    assert amphora_id == "a"
    assert report == HealthReport(
        loadbalancer_id=LoadBalancerId("lb"),
        listeners={ListenerId("l"): ListenerHealth(ListenerState.OPEN)},
    )


def _with(**changes: Any) -> dict[str, Any]:
    return {**to_payload(REPORT, "amp-1"), **changes}


def _listener(**changes: Any) -> dict[str, Any]:
    return _with(listeners={"l": {"state": "OPEN", **changes}})


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        ({}, "amphora_id"),
        (_with(amphora_id=""), "amphora_id"),
        (_with(amphora_id=12), "amphora_id"),
        (_with(loadbalancer_id=None), "loadbalancer_id"),
        (_with(listeners=[]), "listeners"),
        (_with(pools="none"), "pools"),
        (_listener(state="HALF_OPEN"), "listener l: unknown state"),
        (_listener(state=None), "listener l: unknown state"),
        (_listener(counters=[1, 2]), "counters"),
        (_listener(counters={"bytes_in": -1}), "bytes_in"),
        (_listener(counters={"bytes_out": 1.5}), "bytes_out"),
        (_listener(counters={"request_errors": True}), "request_errors"),
        (_listener(counters={"total_connections": "9"}), "total_connections"),
        (_listener(vip_up=1), "listener l: vip_up"),
        (_listener(vip_up="yes"), "listener l: vip_up"),
        (_with(listeners={"l": "OPEN"}), "listener l must be an object"),
        (_with(pools={"p": {"state": "UP", "members": {"m": "ALIVE"}}}), "member m"),
        (_with(pools={"p": {"state": "UP", "members": {"m": 1}}}), "member m"),
        (_with(pools={"p": {"state": "MAYBE"}}), "pool p: unknown state"),
        (_with(pools={"p": {"state": "UP", "members": ["m"]}}), "members"),
    ],
)
def test_malformed_payloads_are_rejected(payload: dict[str, Any], complaint: str) -> None:
    with pytest.raises(HeartbeatRejected, match="malformed heartbeat payload") as caught:
        from_payload(payload)
    assert complaint in str(caught.value)


def test_pool_and_member_counters_round_trip() -> None:
    counted = ListenerCounters(bytes_in=7, total_connections=2, requests=2, check_failures=3)
    report = HealthReport(
        loadbalancer_id=LoadBalancerId("lb-1"),
        pools={
            PoolId("p-1"): PoolHealth(
                PoolState.UP,
                {MemberId("m-1"): MemberState.UP},
                counters=counted,
                member_counters={MemberId("m-1"): counted},
            )
        },
    )
    payload = json.loads(json.dumps(to_payload(report, "amp-1")))
    assert payload["pools"]["p-1"]["counters"]["check_failures"] == 3
    assert payload["pools"]["p-1"]["member_counters"]["m-1"]["bytes_in"] == 7
    assert from_payload(payload) == ("amp-1", report)


def test_a_negative_member_counter_is_refused() -> None:
    payload = to_payload(REPORT, "amp-1")
    payload["pools"]["p-1"]["member_counters"] = {"m-1": {"bytes_in": -1}}
    with pytest.raises(HeartbeatRejected, match="member m-1: counter bytes_in"):
        from_payload(payload)
