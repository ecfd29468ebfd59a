"""The member-down policy through the whole path: a load balancer created through the API
of a running ``lbaas serve`` with a pool asking for ``cut`` (one single-call create) gets
an HAProxy that closes a held TCP connection when the member's health monitor marks it
down (the member still serves: only its check port is closed). The data-plane cases
themselves: test_member_down_haproxy.py.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.test_member_down_haproxy import BOUND_S, Member, _echo, closed_by_peer
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


@pytest.fixture
def member() -> Iterator[Member]:
    started = Member(_echo)
    yield started
    started.close()


def _held(vip: str, port: int) -> socket.socket:
    """A connection through the listener that has echoed a line (retried while the
    amphora's HAProxy is not serving yet)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = socket.create_connection((vip, port), timeout=BOUND_S)
            conn.sendall(b"before\n")
            if conn.recv(100) == b"before\n":
                return conn
            conn.close()
        except OSError:
            pass
        assert time.monotonic() < deadline, "the listener never echoed"
        time.sleep(0.1)


def test_a_pool_created_with_cut_has_its_down_members_connections_closed(
    api: OctaviaApi, member: Member
) -> None:
    address, data_port = member.data.getsockname()
    port = free_port_on("127.0.0.1")  # the VIP is a new address: the port is free there too
    monitor = {"type": "TCP", "delay": 1, "timeout": 1, "max_retries": 1, "max_retries_down": 1}
    the_member = {"address": address, "protocol_port": data_port,
                  "monitor_port": member.check.getsockname()[1]}  # fmt: skip
    pool = {"name": "p", "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN",
            "lbaas_member_down_policy": "cut", "members": [the_member],
            "healthmonitor": monitor}  # fmt: skip
    listener = {"protocol": "TCP", "protocol_port": port, "default_pool": pool}
    lb = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name="member-down", listeners=[listener])
    try:
        with _held(lb["vip_address"], port) as conn:
            member.fail_checks()
            assert closed_by_peer(conn)  # closed by HAProxy as it marked the member down
    finally:
        api.delete_loadbalancer(lb["id"])
