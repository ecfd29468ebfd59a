"""The distributed entry node moves: neighbours learn the VIP's new MAC at once.

Needs root. Namespaces of this test's own: a client with a bridge (the provider network)
and two nodes, each joined to the bridge by a veth. Node A holds the VIP (as the entry
node's agent does, ``AnnouncingVipHolder`` over ``RealVipHolder``) and the client learns
A's MAC; then A releases it and B holds it. No traffic is sent in between, so the client's
entry can only change through B's gratuitous ARP; without it the client would keep
sending to A until its entry went stale.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from lbaas.l4.host.real import RealVipHolder
from lbaas.l4.host.vip_announce import AnnouncingVipHolder, LinkAnnouncer
from tests.support.waiting import wait_for_value

pytestmark = [pytest.mark.root]

CLIENT, NODE_A, NODE_B, VIP = "10.250.78.1", "10.250.78.2", "10.250.78.3", "10.250.78.50"


def _ip(namespace: str, *argv: str) -> str:
    done = subprocess.run(
        ["ip", "-n", namespace, *argv], check=True, capture_output=True, text=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def lab() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = uuid.uuid4().hex[:8]
    names = {"client": f"eg-c-{tag}", "a": f"eg-a-{tag}", "b": f"eg-b-{tag}"}
    created: list[str] = []
    try:
        for namespace in names.values():
            subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
            created.append(namespace)
        client = names["client"]
        _ip(client, "link", "add", "br0", "type", "bridge")
        _ip(client, "addr", "add", f"{CLIENT}/24", "dev", "br0")
        _ip(client, "link", "set", "br0", "up")
        for node, address in (("a", NODE_A), ("b", NODE_B)):
            ns = names[node]
            _ip(ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{node}",
                "netns", client)  # fmt: skip
            _ip(ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip(ns, "link", "set", "eth0", "up")
            _ip(ns, "link", "set", "lo", "up")
            _ip(client, "link", "set", f"p{node}", "master", "br0", "up")
        yield names
    finally:
        for namespace in created:
            subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)


def _mac(namespace: str) -> str:
    return str(json.loads(_ip(namespace, "-j", "link", "show", "eth0"))[0]["address"])


def _client_entry(client: str) -> str | None:
    entries = json.loads(_ip(client, "-j", "neigh", "show", VIP, "dev", "br0") or "[]")
    return str(entries[0].get("lladdr")) if entries and entries[0].get("lladdr") else None


_REFUSED = """
import socket, sys
s = socket.create_connection((sys.argv[1], 9), timeout=5)
"""


def _answered(client: str) -> bool:
    """Whether a TCP connection from the client to the VIP is answered (with a reset: no
    one listens on port 9, but the holder of the VIP replies)."""
    done = subprocess.run(
        ["ip", "netns", "exec", client, sys.executable, "-c", _REFUSED, VIP],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return "ConnectionRefusedError" in done.stderr


def _holder(namespace: str) -> AnnouncingVipHolder:
    return AnnouncingVipHolder(RealVipHolder(namespace), LinkAnnouncer(namespace))


def test_the_client_takes_the_new_entry_nodes_mac_without_asking(lab: dict[str, str]) -> None:
    client, mac_a, mac_b = lab["client"], _mac(lab["a"]), _mac(lab["b"])
    first = _holder(lab["a"])
    first.hold(VIP)
    # The client reaches the VIP through A and so holds A's MAC for it.
    assert _answered(client)
    assert _client_entry(client) == mac_a
    first.release(VIP)
    _holder(lab["b"]).hold(VIP)
    learnt = wait_for_value(
        lambda: _client_entry(client) if _client_entry(client) == mac_b else None,
        10,
        "the client's entry for the VIP to carry the new entry node's MAC",
    )
    assert learnt == mac_b != mac_a
    # B answers on the VIP now; A no longer holds it.
    assert VIP not in _ip(lab["a"], "-4", "addr", "show", "dev", "lo")
    assert _answered(client)
