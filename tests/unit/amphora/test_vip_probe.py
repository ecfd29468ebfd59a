"""The agent's VIP probe with real sockets on 127.0.0.0/8: a listening VIP:port answers,
a closed one does not, and the connect comes from the VIP and the probe's source port."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator

import pytest

from lbaas.amphora.vip_probe import (
    ProbeSubject,
    VipProber,
    connect_failure,
    connects,
    with_probes,
)
from lbaas.model.graph import ListenerId, LoadBalancerId
from lbaas.model.health import HealthReport, ListenerHealth, ListenerState
from lbaas.render.haproxy.probe_source import VIP_PROBE_SOURCE_PORT


@pytest.fixture
def vip() -> str:
    # A random loopback address: other tests on this machine use their own.
    return f"127.{random.randint(100, 200)}.{random.randint(0, 255)}.{random.randint(2, 250)}"


@pytest.fixture
def listening(vip: str) -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind((vip, 0))
    server.listen(4)
    try:
        yield server
    finally:
        server.close()


def test_a_listening_vip_answers_from_the_probe_source(vip: str, listening: socket.socket) -> None:
    port = listening.getsockname()[1]
    assert connects(vip, port, timeout=5.0)
    accepted, source = listening.accept()
    accepted.close()
    assert source == (vip, VIP_PROBE_SOURCE_PORT)
    # Again at once: the reset on close leaves no TIME_WAIT holding the source port.
    assert connects(vip, port, timeout=5.0)


def test_a_closed_port_does_not_answer(vip: str, listening: socket.socket) -> None:
    port = listening.getsockname()[1]
    listening.close()
    assert not connects(vip, port, timeout=5.0)


def test_a_reset_after_the_handshake_is_an_answer_and_a_refusal_is_not() -> None:
    # HAProxy rejects the probe's source port as soon as it accepts: on a loaded machine
    # the reset arrives before the non-blocking connect's outcome is read (CI saw it once).
    assert connect_failure(ConnectionResetError(104, "Connection reset by peer")) is None
    assert connect_failure(ConnectionRefusedError(111, "Connection refused")) == (
        "Connection refused"
    )
    assert connect_failure(OSError(113, "No route to host")) == "No route to host"


def test_the_prober_keeps_the_latest_round_per_amphora(vip: str, listening: socket.socket) -> None:
    port = listening.getsockname()[1]
    subjects = [ProbeSubject("amp-1", vip, {ListenerId("l-1"): port})]
    prober = VipProber(lambda: subjects, interval=1.0, timeout=5.0)
    assert prober.results("amp-1") == {}
    prober.probe_once()
    assert prober.results("amp-1") == {ListenerId("l-1"): True}
    listening.close()
    prober.probe_once()
    assert prober.results("amp-1") == {ListenerId("l-1"): False}
    subjects.clear()  # the amphora is gone: so is its result
    prober.probe_once()
    assert prober.results("amp-1") == {}


def test_results_go_into_the_report_only_for_probed_listeners() -> None:
    report = HealthReport(
        LoadBalancerId("lb"),
        listeners={
            ListenerId("a"): ListenerHealth(ListenerState.OPEN),
            ListenerId("b"): ListenerHealth(ListenerState.OPEN),
        },
    )
    merged = with_probes(report, {ListenerId("a"): False})
    assert merged.listeners[ListenerId("a")].vip_up is False
    assert merged.listeners[ListenerId("b")].vip_up is None
    assert with_probes(report, {}) is report
