"""The own-address probe of a pair amphora against a real HAProxy's ``peers`` listener.

Issue 34: a silent amphora of an ACTIVE_STANDBY pair is kept only while its own HAProxy
acts on an empty connection to its peers port (``lbaas.health.pair_probe``). Here HAProxy
runs the configuration lbaas renders for one amphora of a pair, its local peer on
127.0.0.1: serving, it must answer the probe; stopped (SIGSTOP: the kernel still
completes handshakes), it must not. (Refused, nothing listening:
``test_pair_probe.py``.)
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest

from lbaas.health.pair_probe import PeerPortProbe
from lbaas.model.enums import ListenerProtocol, Topology
from lbaas.render.haproxy.context import HaproxyPeer, HaproxyPeers
from tests.support import graphs
from tests.unit.render.haproxy_runner import free_port, running_haproxy

pytestmark = pytest.mark.haproxy

OWN, PEER = "127.0.0.1", "127.0.0.2"


@pytest.fixture
def haproxy() -> Iterator[tuple[subprocess.Popen[bytes], PeerPortProbe]]:
    """A pair amphora's HAProxy, and the probe of its peers port (the default timeout)."""
    listener = graphs.listener("l", ListenerProtocol.HTTP, free_port(OWN))
    lb = graphs.load_balancer([listener], [], vip_address=OWN)
    lb = dataclasses.replace(lb, topology=Topology.ACTIVE_STANDBY)
    port = free_port(OWN)
    members = (HaproxyPeer("amp-own", OWN, port), HaproxyPeer("amp-peer", PEER, free_port(PEER)))
    with running_haproxy(lb, OWN, "lbpeers-", peers=HaproxyPeers("amp-own", members)) as (
        _,
        process,
    ):
        yield process, PeerPortProbe(timeout=1.0, port=port)


def test_a_serving_haproxy_answers_on_its_peers_port(
    haproxy: tuple[subprocess.Popen[bytes], PeerPortProbe],
) -> None:
    _, probe = haproxy
    for _ in range(5):  # every time, not once in a while
        assert probe.answers(OWN)


def test_a_stopped_haproxy_does_not(
    haproxy: tuple[subprocess.Popen[bytes], PeerPortProbe],
) -> None:
    process, probe = haproxy
    os.kill(process.pid, signal.SIGSTOP)
    try:
        assert not probe.answers(OWN)  # its socket still completes the handshake
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert probe.answers(OWN)
