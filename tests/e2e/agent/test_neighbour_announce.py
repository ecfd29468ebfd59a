"""Gratuitous ARP (IPv4) and unsolicited Neighbour Advertisement (IPv6) from an amphora's
namespace correct a neighbour's stale entry.

Needs root. Two namespaces of this test's own joined by a veth pair stand in for an
amphora and the router on its VIP network. The router holds an entry for the amphora's
address with a MAC address that is not the amphora's (what a rebuilt amphora leaves
behind); after ``RealHostOps.announce_address`` it holds the amphora's real one. The
frames' layouts are checked on their own as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import NamedTuple

import pytest

from lbaas.host.garp import gratuitous_arp_frame, neighbour_advertisement
from lbaas.host.real import RealHostOps
from tests.support.waiting import wait_for_value

pytestmark = [pytest.mark.root]

STALE_MAC = "02:00:00:00:00:99"


class Family(NamedTuple):
    """The addresses of one IP family and how ``ip`` and sysctl name it."""

    name: str
    amphora: str
    router: str
    prefix: int
    ip_flag: str
    address_flags: tuple[str, ...]


IPV4 = Family("ipv4", "10.250.77.2", "10.250.77.1", 24, "-4", ())
# No duplicate address detection: the address is usable (and announced) at once.
IPV6 = Family("ipv6", "fd00:77:77::2", "fd00:77:77::1", 64, "-6", ("nodad",))


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


@pytest.fixture(params=[IPV4, IPV6], ids=lambda family: family.name)
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Family, str, str]]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    family: Family = request.param
    tag = uuid.uuid4().hex[:8]
    amphora, router = f"garp-a-{tag}", f"garp-r-{tag}"
    created: list[str] = []
    try:
        for namespace in (amphora, router):
            subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
            created.append(namespace)
        _ip(amphora, "link", "add", "a0", "type", "veth", "peer", "name", "r0", "netns", router)
        for namespace, device, address in (
            (amphora, "a0", family.amphora),
            (router, "r0", family.router),
        ):
            _ip(
                namespace,
                "addr",
                "add",
                f"{address}/{family.prefix}",
                "dev",
                device,
                *family.address_flags,
            )
            _ip(namespace, "link", "set", device, "up")
        # An entry is not overridden within its locktime (1 s by default) of being set.
        sysctl = f"net.{family.name}.neigh.r0.locktime=0"
        subprocess.run(
            ["ip", "netns", "exec", router, "sysctl", "-qw", sysctl], check=True, timeout=30
        )
        yield family, amphora, router
    finally:
        for namespace in created:
            subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)


def _router_entry(family: Family, router: str) -> str | None:
    shown = _ip(router, "-j", family.ip_flag, "neigh", "show", family.amphora, "dev", "r0")
    entries = json.loads(shown or "[]")
    return str(entries[0].get("lladdr")) if entries else None


def test_a_neighbour_takes_the_new_mac_at_once(pair: tuple[Family, str, str]) -> None:
    family, amphora, router = pair
    real_mac = json.loads(_ip(amphora, "-j", "link", "show", "a0"))[0]["address"]
    _ip(
        router, "neigh", "replace", family.amphora, "lladdr", STALE_MAC, "dev", "r0", "nud", "stale"
    )
    assert _router_entry(family, router) == STALE_MAC
    RealHostOps().announce_address("a0", f"{family.amphora}/{family.prefix}", amphora)
    learnt = wait_for_value(
        lambda: entry if (entry := _router_entry(family, router)) == real_mac else None,
        10,
        "the router's entry for the amphora to carry its real MAC",
    )
    assert learnt == real_mac != STALE_MAC


def test_a_namespace_that_is_not_there_is_an_os_error() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    with pytest.raises(OSError):
        RealHostOps().announce_address("a0", "10.250.77.2/24", f"garp-none-{uuid.uuid4().hex}")
