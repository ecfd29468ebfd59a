"""The entry node's VIP is announced once per take-over, on the links neighbours use."""

from __future__ import annotations

from collections.abc import Sequence

from lbaas.l4.host.recording import RecordingVipHolder
from lbaas.l4.host.vip_announce import AnnouncingVipHolder, announce_links


def test_a_vip_is_announced_when_newly_held_and_again_after_a_release() -> None:
    said: list[list[str]] = []
    inner = RecordingVipHolder()
    holder = AnnouncingVipHolder(inner, lambda vips: said.append(list(vips)))
    holder.hold("10.1.0.9")
    holder.hold("10.1.0.9")  # every spec re-holds it: no new announcement
    assert said == [["10.1.0.9"]] and inner.held
    holder.release("10.1.0.9")
    holder.hold("10.1.0.9")  # the entry came back here
    assert said == [["10.1.0.9"], ["10.1.0.9"]]


def test_many_vips_held_at_once_are_announced_in_one_call_each_once() -> None:
    said: list[list[str]] = []
    inner = RecordingVipHolder()
    holder = AnnouncingVipHolder(inner, lambda vips: said.append(list(vips)))
    holder.hold("10.1.0.1")
    holder.hold_many(["10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.2"])
    assert said == [["10.1.0.1"], ["10.1.0.2", "10.1.0.3"]]
    assert inner.held == {"10.1.0.1", "10.1.0.2", "10.1.0.3"}


def test_a_failed_announcement_leaves_the_vip_held() -> None:
    def fails(vips: Sequence[str]) -> None:
        raise OSError("no raw socket")

    inner = RecordingVipHolder()
    AnnouncingVipHolder(inner, fails).hold("10.1.0.9")
    assert inner.held


def _link(name: str, flags: list[str], *cidrs: str) -> dict[str, object]:
    infos = [
        {"family": "inet", "local": c.split("/")[0], "prefixlen": int(c.split("/")[1])}
        for c in cidrs
    ]
    return {"ifname": name, "flags": flags, "addr_info": infos}


def test_links_whose_network_holds_the_vip_come_first_else_every_arp_link() -> None:
    links = [
        _link("lo", ["LOOPBACK", "UP"], "127.0.0.1/8", "10.1.0.9/32"),
        _link("eth0", ["BROADCAST", "UP"], "10.1.0.2/24"),
        _link("eth1", ["BROADCAST", "UP"], "10.2.0.2/24"),
        _link("eth2", ["BROADCAST"], "10.1.0.3/24"),  # down
        _link("wg0", ["NOARP", "UP"], "10.1.0.4/24"),
    ]
    assert announce_links(links, "10.1.0.9") == ["eth0"]
    assert announce_links(links, "192.0.2.1") == ["eth0", "eth1"]
    assert announce_links([links[0]], "10.1.0.9") == []
    # A link with no Ethernet address (a tunnel, say) has nothing to announce the VIP at.
    tunnel = {**_link("tun0", ["POINTOPOINT", "UP"], "10.1.0.5/24"), "link_type": "none"}
    assert announce_links([tunnel, links[1]], "10.1.0.9") == ["eth0"]
