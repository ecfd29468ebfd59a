"""A netns amphora's kernel parts on fakes: per-leg routing, MTU, the VIP filter, UDP counters.

The rendered rulesets are also given to the real ``nft -c`` (root), which refuses what it
could not load.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable

import pytest

from lbaas.amphora.datapath import AmphoraDatapath
from lbaas.amphora.plumbing import apply_plumbing, plan_plumbing
from lbaas.amphora.source_routing import apply_routing, plan_routing
from lbaas.amphora.vip_filter import FORWARD_CHAIN, TABLE, render
from lbaas.host.recording import RecordingHostOps
from lbaas.host.routing import Route, SourceRule
from lbaas.l4 import nft
from lbaas.l4.health.base import Prober
from lbaas.l4.health.checker import ChangeSink, HealthChecker
from lbaas.l4.health.monitor import Target
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.service import HashKey, L4Listener, L4Member, L4Protocol, L4Service
from lbaas.model.graph import ListenerId, MemberId, PoolId
from lbaas.model.health import MemberState, PoolState
from lbaas.wire.amphora import AmphoraSpec, HaproxyFacts, MemberNetwork, NetworkSpec, VipSpec
from lbaas.wire.datapath import (
    HAPROXY_PEER_PORT,
    AllowedPeer,
    ListenerPort,
    UdpListener,
    UdpMember,
    VipFilter,
)
from lbaas.wire.l4 import L4MonitorSpec

UDP = UdpListener(
    listener_id="l-dns",
    pool_id="p-dns",
    port=53,
    table_size=251,
    members=(UdpMember(key="m1", address="10.2.0.11", port=5353),),
)


def _spec(udp: tuple[UdpListener, ...] = (UDP,)) -> AmphoraSpec:
    return AmphoraSpec(
        spec_format=2,
        version=1,
        loadbalancer_id="lb-1",
        haproxy_config="global\n",
        haproxy_facts=HaproxyFacts(runtime_socket="/x/stats.sock", fixed_digest="d"),
        vip=VipSpec(
            address="10.1.0.5",
            subnet_cidr="10.1.0.0/24",
            network_id="net-vip",
            gateway="10.1.0.1",
            mtu=1400,
        ),
        network=NetworkSpec(
            member_networks=(
                MemberNetwork(
                    network_id="net-m",
                    subnet_cidr="10.2.0.0/24",
                    address="10.2.0.10",
                    gateway="10.2.0.1",
                    mtu=9000,
                ),
            )
        ),
        vip_filter=VipFilter(
            listener_ports=(
                ListenerPort(protocol="tcp", port=80, allowed_cidrs=("192.0.2.0/24",)),
                ListenerPort(protocol="udp", port=53),
            ),
            peers=(AllowedPeer(address="10.1.0.7"),),
        ),
        udp_listeners=udp,
    )


def test_each_leg_has_its_table_and_each_address_its_rule() -> None:
    spec = _spec()
    plumbing = plan_plumbing("amp-1", spec)
    plan = plan_routing(plumbing, spec.vip.address, spec.vip.network_id)
    legs = {leg.network_id: leg for leg in plumbing.legs}
    vip_dev, member_dev = legs["net-vip"].amphora_end, legs["net-m"].amphora_end
    tables = dict(plan.tables)
    assert set(tables) == {100, 101}
    by_device = {routes[0].device: (table, routes) for table, routes in tables.items()}
    vip_table, vip_routes = by_device[vip_dev]
    member_table, member_routes = by_device[member_dev]
    assert vip_routes == (
        Route("10.1.0.0/24", vip_dev, source="10.1.0.5"),
        Route("default", vip_dev, gateway="10.1.0.1"),
    )
    assert member_routes[-1] == Route("default", member_dev, gateway="10.2.0.1")
    assert plan.rules == (
        SourceRule(1000, "10.1.0.5", vip_table),
        SourceRule(1001, "10.2.0.10", member_table),
    )
    assert plan.main == (Route("default", vip_dev, gateway="10.1.0.1"),)
    host = RecordingHostOps()
    apply_plumbing(host, plumbing, None)
    apply_routing(host, plan)
    assert host.mtus == {
        legs["net-vip"].host_end: 1400,
        vip_dev: 1400,
        legs["net-m"].host_end: 9000,
        member_dev: 9000,
    }
    assert host.rules[plumbing.namespace] == plan.rules
    assert host.routes[(plumbing.namespace, "main")] == plan.main


def test_the_filter_lets_in_listener_ports_icmp_and_peers_and_drops_the_rest() -> None:
    text = render("10.1.0.5", "lbvleg", _spec().vip_filter, (UDP,))
    assert (
        'iifname "lbvleg" ip daddr 10.1.0.5 ip saddr { 192.0.2.0/24 } tcp dport 80 accept' in text
    )
    assert 'iifname "lbvleg" ip daddr 10.1.0.5 udp dport 53 accept' in text
    assert 'iifname "lbvleg" ip saddr 10.1.0.7 ip protocol 112 accept' in text
    assert 'iifname "lbvleg" meta l4proto icmp accept' in text
    assert text.index("accept") < text.index('counter drop comment "vip_drop"')
    assert 'comment "udp_53_in"' in text and 'comment "udp_53_out"' in text
    assert "ct status dnat masquerade" in text
    assert "vip_in" not in render("10.1.0.5", "lbvleg", None, ())  # no filter sent: open


@pytest.mark.root
def test_a_pair_amphora_lets_in_its_haproxy_peers_port_on_its_own_address_only() -> None:
    """The health manager's own-address probe (``lbaas.health.pair_probe``) reaches a pair
    amphora's HAProxy peers listener; the VIP's peers port stays closed, and a SINGLE
    amphora (no own address) opens nothing more."""
    text = render("10.1.0.5", "lbvleg", _spec().vip_filter, (), "10.1.0.6")
    rule = f'iifname "lbvleg" ip daddr 10.1.0.6 tcp dport {HAPROXY_PEER_PORT} accept'
    assert rule in text
    assert text.index(rule) < text.index('counter drop comment "vip_drop"')
    assert f"ip daddr 10.1.0.5 tcp dport {HAPROXY_PEER_PORT}" not in text
    assert f"dport {HAPROXY_PEER_PORT}" not in render("10.1.0.5", "lbvleg", _spec().vip_filter, ())
    assert _nft_check(text).returncode == 0


@pytest.mark.root
def test_a_port_whose_cidrs_are_all_ipv6_is_closed_to_ipv4_sources() -> None:
    ports = (
        ListenerPort(protocol="udp", port=53, allowed_cidrs=("2001:db8::/32",)),
        ListenerPort(protocol="udp", port=54, allowed_cidrs=("2001:db8::/32", "10.9.0.0/16")),
    )
    text = render("10.1.0.5", "lbvleg", VipFilter(listener_ports=ports), ())
    assert "dport 53" not in text  # no accept rule: the chain's drop takes it
    assert "ip daddr 10.1.0.5 ip saddr { 10.9.0.0/16 } udp dport 54 accept" in text
    assert _nft_check(text).returncode == 0


def _nft_check(text: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("nft") or shutil.which("nft", path="/usr/sbin:/sbin")
    if binary is None:
        pytest.fail("the nft binary is required to check rendered rulesets")
    return subprocess.run([binary, "-c", "-f", "-"], input=text, capture_output=True, text=True)


@pytest.mark.root
def test_nft_accepts_the_filter_and_a_masked_source_hash() -> None:
    done = _nft_check(render("10.1.0.5", "lbvleg", _spec().vip_filter, (UDP,)))
    assert done.returncode == 0, done.stderr
    members = (L4Member("m1", "10.2.0.11", 5353), L4Member("m2", "10.2.0.12", 5353))
    listener = L4Listener(
        L4Protocol.UDP, 53, members, HashKey.SOURCE_ADDRESS, table_size=251, source_prefix=24
    )
    service = L4Service("lb-1", "10.1.0.5", (listener,))
    text = nft.render_full(service, {listener.name: listener.table()})
    assert "jhash ip saddr & 255.255.255.0 mod 251" in text
    done = _nft_check(text)
    assert done.returncode == 0, done.stderr
    assert _nft_check(text.replace("& 255.255.255.0", "& 255.255.255.0.0")).returncode != 0


def _listing(comment_values: dict[str, tuple[int, int]]) -> dict[str, object]:
    rules = [
        {"rule": {"comment": name, "expr": [{"counter": {"packets": p, "bytes": b}}]}}
        for name, (p, b) in comment_values.items()
    ]
    return {"nftables": rules}


def test_udp_counters_add_up_across_a_table_that_restarted_them() -> None:
    ops, host = RecordingNftOps(), RecordingHostOps()
    datapath = AmphoraDatapath(host, ops, "ns")
    spec = _spec()

    def counters(flows: int, bytes_in: int, bytes_out: int) -> None:
        ops.set_flows(nft.chain_name("lb-1"), "10.1.0.5", {"udp_53": flows})
        ops.chains[(TABLE, FORWARD_CHAIN)] = _listing(
            {"udp_53_in": (0, bytes_in), "udp_53_out": (0, bytes_out)}
        )

    counters(7, 700, 900)  # counted before this agent's life: not ours to report
    datapath.apply(spec, datapath.check(spec, "lbvleg"))
    assert host.forwarding == {"ns": True}
    done = (len(ops.checked), len(ops.loaded))
    datapath.apply(spec, datapath.check(spec, "lbvleg"))  # the same again: nothing to do
    assert (len(ops.checked), len(ops.loaded)) == done
    counters(10, 1000, 1300)
    ops.flow_counts[(L4Protocol.UDP, "10.1.0.5", 53)] = 2
    listeners, pools = datapath.health(spec)
    first = listeners[ListenerId("l-dns")].counters
    assert (first.total_connections, first.bytes_in, first.bytes_out) == (3, 300, 400)
    assert first.active_connections == 2
    counters(2, 200, 250)  # the element was added again: its counter started again
    again = datapath.health(spec)[0][ListenerId("l-dns")].counters
    assert (again.total_connections, again.bytes_in, again.bytes_out) == (5, 500, 650)
    assert dict(pools[PoolId("p-dns")].members) == {MemberId("m1"): MemberState.NO_CHECK}
    datapath.apply(_spec(udp=()), datapath.check(_spec(udp=()), "lbvleg"))
    assert host.forwarding == {"ns": False}
    assert ops.loaded[-1].endswith(f"delete chain ip lbaas {nft.chain_name('lb-1')}\n")  # gone


def test_ipv6_vips_are_neither_filtered_nor_source_routed() -> None:
    spec = AmphoraSpec(
        spec_format=2,
        version=1,
        loadbalancer_id="lb-6",
        haproxy_config="global\n",
        haproxy_facts=HaproxyFacts(runtime_socket="/x/stats.sock", fixed_digest="d"),
        vip=VipSpec(
            address="2001:db8::5",
            subnet_cidr="2001:db8::/64",
            network_id="n6",
            gateway="2001:db8::1",
        ),
        vip_filter=VipFilter(listener_ports=(ListenerPort(protocol="tcp", port=80),)),
    )
    plumbing = plan_plumbing("amp-6", spec)
    plan = plan_routing(plumbing, spec.vip.address, spec.vip.network_id)
    assert plan.rules == () and plan.main == () and dict(plan.tables)[100] == ()
    text = render(spec.vip.address, "lbvleg", spec.vip_filter, ())
    assert "vip_in" not in text and "2001:db8" not in text


class _TableProber(Prober):
    """Answers each member's probe from ``up`` (the network stays out of unit tests)."""

    def __init__(self, up: dict[str, bool]) -> None:
        self.up = up
        self.probed: set[tuple[str, int]] = set()

    async def probe(self, target: Target) -> bool:
        self.probed.add((target.address, target.port))
        return self.up[target.key]


CHECKED = UdpListener(
    listener_id="l-dns",
    pool_id="p-dns",
    port=53,
    table_size=251,
    members=(
        UdpMember(key="m1", address="10.2.0.11", port=5353),
        UdpMember(key="m2", address="10.2.0.12", port=5353, monitor_port=8053),
    ),
    monitor=L4MonitorSpec(
        type="UDP-CONNECT", delay=0.05, timeout=0.5, max_retries=2, max_retries_down=1
    ),
)


def _wait(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < deadline, f"not reached: {what}"
        time.sleep(0.02)


def test_a_udp_member_found_down_gets_no_new_flows_and_is_reported_down() -> None:
    ops, host = RecordingNftOps(), RecordingHostOps()
    prober = _TableProber({"m1": True, "m2": True})
    started: list[HealthChecker] = []

    def make_checker(sink: ChangeSink) -> HealthChecker:
        checker = HealthChecker(prober, sink, batch_count=1, batch_delay=0.0)
        started.append(checker)
        return checker

    datapath = AmphoraDatapath(host, ops, "ns", make_checker)
    spec = _spec(udp=(CHECKED,))

    def members() -> dict[MemberId, MemberState]:
        return dict(datapath.health(spec)[1][PoolId("p-dns")].members)

    unchecked = CHECKED.model_copy(update={"monitor": None})
    try:
        datapath.apply(_spec(udp=(unchecked,)), datapath.check(_spec(udp=(unchecked,)), "x"))
        assert started == [] and "10.2.0.12 . 5353" in ops.loaded[-1]  # no monitor, no checker
        # The monitor added: the same table (everyone starts healthy), now reported UP.
        datapath.apply(spec, datapath.check(spec, "lbvleg"))
        assert len(started) == 1
        _wait(lambda: ("10.2.0.12", 8053) in prober.probed, "m2 probed at its monitor port")
        assert members() == {MemberId("m1"): MemberState.UP, MemberId("m2"): MemberState.UP}
        loads = len(ops.loaded)
        prober.up["m2"] = False
        _wait(lambda: members()[MemberId("m2")] is MemberState.DOWN, "m2 reported DOWN")
        _wait(lambda: len(ops.loaded) > loads, "the table rewritten")
        moved = ops.loaded[-1]  # only m2's slots, now m1's
        assert "add element" in moved and "10.2.0.11 . 5353" in moved, moved
        assert "10.2.0.12" not in moved
        assert datapath.health(spec)[1][PoolId("p-dns")].state is PoolState.UP
        prober.up["m1"] = False  # nobody left: the pool is DOWN
        _wait(lambda: datapath.health(spec)[1][PoolId("p-dns")].state is PoolState.DOWN, "DOWN")
        prober.up["m1"] = True  # two successes in a row bring it back
        _wait(lambda: members()[MemberId("m1")] is MemberState.UP, "m1 UP again")
        prober.up["m2"] = True
        _wait(lambda: members()[MemberId("m2")] is MemberState.UP, "m2 UP again")
        _wait(lambda: "10.2.0.12 . 5353" in ops.loaded[-1], "m2's slots back in the table")
        # The monitor deleted: the checker stops, the members are unchecked again.
        datapath.apply(_spec(udp=(unchecked,)), datapath.check(_spec(udp=(unchecked,)), "x"))
        assert not started[0]._thread.is_alive()
        assert set(dict(datapath.health(_spec(udp=(unchecked,)))[1][PoolId("p-dns")].members)
                   .values()) == {MemberState.NO_CHECK}  # fmt: skip
    finally:
        datapath.close()
