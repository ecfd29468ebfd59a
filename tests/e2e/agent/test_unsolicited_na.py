"""Unsolicited Neighbour Advertisement from an amphora's namespace corrects a stale entry.

Needs root. As for gratuitous ARP (``test_gratuitous_arp``), with an IPv6 VIP: a router
namespace holds a neighbour entry for the amphora's address with a MAC address that is not
the amphora's (what a rebuilt amphora leaves behind); after
``RealHostOps.announce_address`` it holds the amphora's real one. The message's layout is
checked on its own as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from lbaas.agent.host.garp import neighbour_advertisement
from lbaas.agent.host.real import RealHostOps
from tests.support.waiting import wait_for_value

pytestmark = [pytest.mark.root]

STALE_MAC = "02:00:00:00:00:98"
AMPHORA, ROUTER = "fd00:77:77::2", "fd00:77:77::1"


def test_the_message_is_an_overriding_na_for_the_address_at_the_mac() -> None:
    mac = bytes.fromhex("0a0b0c0d0e0f")
    message = neighbour_advertisement(mac, "2001:db8::7")
    assert message[0] == 136 and message[1] == 0  # Neighbour Advertisement, code 0
    assert message[4] == 0x20  # Override only: not a router, not solicited
    assert message[8:24] == bytes.fromhex("20010db8000000000000000000000007")
    assert message[24:26] == b"\x02\x01" and message[26:32] == mac  # target link-layer
    with pytest.raises(ValueError):
        neighbour_advertisement(b"\x00" * 7, "2001:db8::7")


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
    amphora, router = f"na-a-{tag}", f"na-r-{tag}"
    created: list[str] = []
    try:
        for namespace in (amphora, router):
            subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
            created.append(namespace)
        _ip(amphora, "link", "add", "a0", "type", "veth", "peer", "name", "r0", "netns", router)
        _ip(amphora, "addr", "add", f"{AMPHORA}/64", "dev", "a0", "nodad")
        _ip(router, "addr", "add", f"{ROUTER}/64", "dev", "r0", "nodad")
        _ip(amphora, "link", "set", "a0", "up")
        _ip(router, "link", "set", "r0", "up")
        subprocess.run(
            ["ip", "netns", "exec", router, "sysctl", "-qw", "net.ipv6.neigh.r0.locktime=0"],
            check=True,
            timeout=30,
        )
        yield amphora, router
    finally:
        for namespace in created:
            subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)


def _router_entry(router: str) -> str | None:
    entries = json.loads(_ip(router, "-j", "-6", "neigh", "show", AMPHORA, "dev", "r0") or "[]")
    return str(entries[0].get("lladdr")) if entries else None


def test_a_neighbour_takes_the_new_mac_at_once(pair: tuple[str, str]) -> None:
    amphora, router = pair
    real_mac = json.loads(_ip(amphora, "-j", "link", "show", "a0"))[0]["address"]
    _ip(router, "neigh", "replace", AMPHORA, "lladdr", STALE_MAC, "dev", "r0", "nud", "stale")
    assert _router_entry(router) == STALE_MAC
    RealHostOps().announce_address("a0", f"{AMPHORA}/64", amphora)
    learnt = wait_for_value(
        lambda: _router_entry(router) if _router_entry(router) == real_mac else None,
        10,
        "the router's entry for the amphora to carry its real MAC",
    )
    assert learnt == real_mac != STALE_MAC
