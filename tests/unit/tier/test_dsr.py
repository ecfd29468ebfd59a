"""The DSR table and routes of a tier node: marks from member addresses, ``nft -c`` (root)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lbaas.l4.service import HashKey, L4Listener, L4Member, L4Protocol, L4Service
from lbaas.tier import dsr
from tests.unit.l4.test_nft_render import nft_check

LB = "d5e0c1a2-3b4c-4d5e-8f60-718293a4b5c6"


def _service(*addresses: str, protocol: L4Protocol = L4Protocol.TCP) -> L4Service:
    members = tuple(L4Member(address, address, 80) for address in addresses)
    listener = L4Listener(protocol, 80, members, table_size=7)
    return L4Service(LB, "10.9.0.200", (listener,))


def test_a_members_mark_is_its_address_and_no_other_members_mark_moves() -> None:
    assert dsr.member_mark("10.1.2.3") == 0x0A010203
    two = dsr.slot_marks(_service("10.1.2.3", "10.1.2.4").listeners[0])
    three = dsr.slot_marks(_service("10.1.2.3", "10.1.2.4", "10.1.2.5").listeners[0])
    assert set(two) == {0x0A010203, 0x0A010204}
    assert set(three) == {0x0A010203, 0x0A010204, 0x0A010205} and len(three) == 7


def test_every_node_renders_the_same_table_whatever_order_it_learnt_the_members_in() -> None:
    assert dsr.render([_service("10.1.2.3", "10.1.2.4", "10.1.2.5")]) == dsr.render(
        [_service("10.1.2.5", "10.1.2.3", "10.1.2.4")]
    )


def test_the_vip_path_is_untracked_and_marked_at_raw_priority() -> None:
    text = dsr.render([_service("10.1.2.3")])
    assert "type filter hook prerouting priority raw;" in text
    assert "th dport 80 notrack meta mark set jhash ip saddr . th sport" in text
    assert 'tcp flags & (syn | ack) == syn counter comment "syn ' in text
    assert text.startswith(f"table ip {dsr.TABLE}\ndelete table ip {dsr.TABLE}\n")


def test_udp_listeners_get_no_syn_counter() -> None:
    text = dsr.render([_service("10.1.2.3", protocol=L4Protocol.UDP)])
    assert "notrack meta mark set" in text and "syn" not in text


def test_source_prefixes_are_refused() -> None:
    members = (L4Member("m", "10.1.2.3", 80),)
    listener = L4Listener(
        L4Protocol.TCP, 80, members, hash_key=HashKey.SOURCE_ADDRESS, source_prefix=24
    )
    with pytest.raises(ValueError):
        dsr.render([L4Service(LB, "10.9.0.200", (listener,))])


def test_routes_rules_and_member_settings() -> None:
    assert dsr.route_command("10.1.2.3", "mem0") == [
        *("route", "replace", "default", "via", "10.1.2.3", "dev", "mem0"),
        *("table", str(0x0A010203)),
    ]
    assert dsr.rule_command("10.1.2.3", "add")[:5] == [
        *("rule", "add", "fwmark", str(0x0A010203), "lookup"),
    ]
    with pytest.raises(ValueError):
        dsr.rule_command("10.1.2.3", "flush")
    settings = dsr.member_sysctls(["mem0"])
    assert "net.ipv4.conf.all.arp_ignore=1" in settings
    assert "net.ipv4.conf.mem0.arp_announce=2" in settings
    assert dsr.member_addresses([_service("10.1.2.10", "10.1.2.9")]) == ["10.1.2.9", "10.1.2.10"]


def test_new_flow_counts_read_the_syn_counters() -> None:
    listing = {
        "nftables": [
            {"rule": {"comment": "syn mx_tcp_80", "expr": [{"counter": {"packets": 5}}]}},
            {"rule": {"comment": "mx_tcp_80", "expr": [{"counter": {"packets": 99}}]}},
        ]
    }
    assert dsr.new_flow_counts(listing) == {"mx_tcp_80": 5}


@pytest.mark.root
def test_nft_accepts_it() -> None:
    done = nft_check(dsr.render([_service("10.1.2.3", "10.1.2.4")]))
    assert done.returncode == 0, done.stderr


def _filtered(cidrs: tuple[str, ...]) -> L4Service:
    base = _service("10.1.2.3", "10.1.2.4")
    listener = base.listeners[0]
    return L4Service(base.lb_id, base.vip, (replace(listener, allowed_cidrs=cidrs),))


def test_allowed_cidrs_drop_other_sources_before_the_mark() -> None:
    text = dsr.render([_filtered(("10.1.0.0/16", "2001:db8::/32"))])
    drop = "ip daddr 10.9.0.200 meta l4proto tcp th dport 80 ip saddr != @ad5e0c1a23b4c_tcp_80 drop"
    assert drop in text and text.index(drop) < text.index("notrack meta mark set")
    assert "\t\t\t10.1.0.0/16,\n\t\t}" in text and "2001:db8" not in text
    assert "@ad5e0c1a23b4c" not in dsr.render([_service("10.1.2.3")])


@pytest.mark.root
@pytest.mark.parametrize("cidrs", [("10.1.0.0/16", "192.0.2.7/32"), ("2001:db8::/32",)])
def test_nft_accepts_allowed_cidrs(cidrs: tuple[str, ...]) -> None:
    done = nft_check(dsr.render([_filtered(cidrs)]))
    assert done.returncode == 0, done.stderr


def test_static_routes_one_multipath_route_per_vip() -> None:
    from lbaas.tier.static_routes import route_command

    assert route_command("10.9.0.200", ["10.8.0.12", "10.8.0.11"]) == [
        *("route", "replace", "10.9.0.200/32"),
        *("nexthop", "via", "10.8.0.11", "nexthop", "via", "10.8.0.12"),
    ]
    assert route_command("10.9.0.200", []) == ["route", "del", "10.9.0.200/32"]
    with pytest.raises(ValueError):
        route_command("10.9.0.200", ["10.8.0.300"])
