"""Heartbeats: one sealed datagram per report, decodable by the health manager's codec."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from lbaas.fleet.heartbeat_sender import HeartbeatSender
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
from lbaas.wire.heartbeat.envelope import open_envelope
from lbaas.wire.heartbeat.report_codec import from_payload
from tests.support.udp import udp_receiver

KEY = b"test-key"
REPORT = HealthReport(
    LoadBalancerId("lb-1"),
    listeners={
        ListenerId("l1"): ListenerHealth(ListenerState.OPEN, ListenerCounters(1, 2, 3, 4, 5))
    },
    pools={PoolId("p1"): PoolHealth(PoolState.UP, {MemberId("m1"): MemberState.DRAIN})},
)


@pytest.fixture
def receiver() -> Iterator[socket.socket]:
    with udp_receiver(10) as sock:
        yield sock


def test_each_report_is_sent_sealed(receiver: socket.socket) -> None:
    reports = [("amp-1", REPORT), ("amp-2", REPORT)]
    sender = HeartbeatSender(lambda: reports, KEY, receiver.getsockname(), epoch=7)
    try:
        assert sender.send_once() == 2
        assert sender.send_once() == 2
    finally:
        sender.stop()
    envelopes = [open_envelope(receiver.recv(65536), KEY) for _ in range(4)]
    assert [e.sender for e in envelopes] == ["amp-1", "amp-2", "amp-1", "amp-2"]
    assert all(e.epoch == 7 for e in envelopes)
    sequences = [e.sequence for e in envelopes]
    assert sequences == sorted(sequences) and len(set(sequences)) == 4
    amphora_id, decoded = from_payload(envelopes[0].payload)
    assert amphora_id == "amp-1" and decoded == REPORT


def test_the_thread_keeps_sending_after_a_failing_round(receiver: socket.socket) -> None:
    rounds: list[int] = []

    def source() -> list[tuple[str, HealthReport]]:
        rounds.append(1)
        if len(rounds) == 1:
            raise RuntimeError("statistics exploded")
        return [("amp-1", REPORT)]

    sender = HeartbeatSender(source, KEY, receiver.getsockname(), interval=0.01)
    sender.start()
    try:
        envelope = open_envelope(receiver.recv(65536), KEY)
    finally:
        sender.stop()
    assert envelope.sender == "amp-1" and sender.failures >= 1


def test_a_report_too_large_for_a_datagram_costs_only_its_own_heartbeat(
    receiver: socket.socket,
) -> None:
    listeners = {
        ListenerId(f"listener-{n:05d}"): ListenerHealth(ListenerState.OPEN) for n in range(2000)
    }
    huge = HealthReport(LoadBalancerId("lb-huge"), listeners=listeners)
    reports = [("amp-1", REPORT), ("amp-huge", huge), ("amp-2", REPORT)]
    sender = HeartbeatSender(lambda: reports, KEY, receiver.getsockname(), epoch=7)
    try:
        assert sender.send_once() == 2 and sender.failures == 1
    finally:
        sender.stop()
    assert [open_envelope(receiver.recv(65536), KEY).sender for _ in range(2)] == ["amp-1", "amp-2"]


def test_a_pool_too_large_with_member_counters_is_sent_with_states_only(
    receiver: socket.socket,
) -> None:
    members = {MemberId(f"member-{n:05d}-{'x' * 24}"): MemberState.UP for n in range(500)}
    counted = ListenerCounters(bytes_in=123456789, bytes_out=987654321, total_connections=4242)
    pool = PoolHealth(
        PoolState.UP, members, counters=counted, member_counters=dict.fromkeys(members, counted)
    )
    big = HealthReport(LoadBalancerId("lb-big"), pools={PoolId("p1"): pool})
    sender = HeartbeatSender(lambda: [("amp-big", big)], KEY, receiver.getsockname(), epoch=7)
    try:
        assert sender.send_once() == 1 and sender.failures == 0
    finally:
        sender.stop()
    _, decoded = from_payload(open_envelope(receiver.recv(65536), KEY).payload)
    (got,) = decoded.pools.values()
    assert got.members == members and got.counters == counted  # the pool's still travel
    assert got.member_counters == {}


def test_member_counters_can_be_left_out_by_setting(receiver: socket.socket) -> None:
    counted = ListenerCounters(bytes_in=5)
    pool = PoolHealth(
        PoolState.UP,
        {MemberId("m1"): MemberState.UP},
        counters=counted,
        member_counters={MemberId("m1"): counted},
    )
    report = HealthReport(LoadBalancerId("lb-1"), pools={PoolId("p1"): pool})
    sender = HeartbeatSender(
        lambda: [("amp-1", report)], KEY, receiver.getsockname(), member_counters=False
    )
    try:
        assert sender.send_once() == 1
    finally:
        sender.stop()
    _, decoded = from_payload(open_envelope(receiver.recv(65536), KEY).payload)
    (got,) = decoded.pools.values()
    assert got.counters == counted and got.member_counters == {}
    assert got.members == {MemberId("m1"): MemberState.UP}
