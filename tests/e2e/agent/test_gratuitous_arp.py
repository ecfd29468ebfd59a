"""Gratuitous ARP from an amphora's namespace corrects a neighbour's stale entry.

Needs root. Two namespaces of this test's own joined by a veth pair stand in for an
amphora and the router on its VIP network. The router holds an entry for the amphora's
address with a MAC address that is not the amphora's (what a rebuilt amphora leaves
behind); after ``RealHostOps.announce_address`` it holds the amphora's real one. The
frame's layout is checked on its own as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from lbaas.agent.host.garp import gratuitous_arp_frame
from lbaas.agent.host.real import RealHostOps
from tests.support.waiting import wait_for_value

pytestmark = [pytest.mark.root]

STALE_MAC = "02:00:00:00:00:99"
AMPHORA, ROUTER = "10.250.77.2", "10.250.77.1"


def test_the_frame_is_a_broadcast_arp_request_for_the_address_at_the_mac() -> None:
    mac = bytes.fromhex("0a0b0c0d0e0f")
    frame = gratuitous_arp_frame(mac, "192.0.2.7")
    assert frame[:6] == b"\xff" * 6 and frame[6:12] == mac and frame[12:14] == b"\x08\x06"
    arp = frame[14:]
    assert arp[6:8] == b"\x00\x01"  # a request
    assert arp[8:14] == mac and arp[14:18] == bytes([192, 0, 2, 7])
    assert arp[24:28] == bytes([192, 0, 2, 7])  # target address = sender address
    with pytest.raises(ValueError):
        gratuitous_arp_frame(b"\x00" * 5, "192.0.2.7")


def _ip(namespace: str, *argv: str) -> str:
    done = subprocess.run(
        ["ip", "-n", namespace, *argv], check=True, capture_output=True, text=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def pair() -> Iterator[tuple[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = uuid.uuid4().hex[:8]
    amphora, router = f"garp-a-{tag}", f"garp-r-{tag}"
    created: list[str] = []
    try:
        for namespace in (amphora, router):
            subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
            created.append(namespace)
        _ip(amphora, "link", "add", "a0", "type", "veth", "peer", "name", "r0", "netns", router)
        _ip(amphora, "addr", "add", f"{AMPHORA}/24", "dev", "a0")
        _ip(router, "addr", "add", f"{ROUTER}/24", "dev", "r0")
        _ip(amphora, "link", "set", "a0", "up")
        _ip(router, "link", "set", "r0", "up")
        # An entry is not overridden within its locktime (1 s by default) of being set.
        subprocess.run(
            ["ip", "netns", "exec", router, "sysctl", "-qw", "net.ipv4.neigh.r0.locktime=0"],
            check=True,
            timeout=30,
        )
        yield amphora, router
    finally:
        for namespace in created:
            subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)


def _router_entry(router: str) -> str | None:
    entries = json.loads(_ip(router, "-j", "neigh", "show", AMPHORA, "dev", "r0") or "[]")
    return str(entries[0].get("lladdr")) if entries else None


def test_a_neighbour_takes_the_new_mac_at_once(pair: tuple[str, str]) -> None:
    amphora, router = pair
    real_mac = json.loads(_ip(amphora, "-j", "link", "show", "a0"))[0]["address"]
    _ip(router, "neigh", "replace", AMPHORA, "lladdr", STALE_MAC, "dev", "r0", "nud", "stale")
    assert _router_entry(router) == STALE_MAC
    RealHostOps().announce_address("a0", f"{AMPHORA}/24", amphora)
    learnt = wait_for_value(
        lambda: _router_entry(router) if _router_entry(router) == real_mac else None,
        10,
        "the router's entry for the amphora to carry its real MAC",
    )
    assert learnt == real_mac != STALE_MAC


def test_a_namespace_that_is_not_there_is_an_os_error() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    with pytest.raises(OSError):
        RealHostOps().announce_address("a0", "10.250.77.2/24", f"garp-none-{uuid.uuid4().hex}")
