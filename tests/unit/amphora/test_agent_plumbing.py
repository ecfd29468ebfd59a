"""Netns plumbing planned from a spec and applied idempotently through HostOps."""

from __future__ import annotations

from pathlib import Path

from agent_fakes import make_config, spec_fields

from lbaas.amphora.plumbing import (
    apply_plumbing,
    bridge_name,
    namespace_name,
    plan_plumbing,
    remove_plumbing,
)
from lbaas.host.recording import RecordingHostOps
from lbaas.wire.amphora import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec


def _spec(*members: MemberNetwork, vip: str = "10.1.0.5") -> AmphoraSpec:
    return AmphoraSpec(
        version=1,
        loadbalancer_id="lb",
        **spec_fields(make_config(Path("/x"))),
        vip=VipSpec(address=vip, subnet_cidr="10.1.0.0/24", network_id="net-vip"),
        network=NetworkSpec(vip_host_address="10.1.0.1", member_networks=members),
    )


MEMBERS = MemberNetwork(network_id="net-m", subnet_cidr="10.2.0.0/24", address="10.2.0.5")


def test_plan_names_fit_linux_limits() -> None:
    plan = plan_plumbing("5f1d7c1e-8a3b-4c9e-9f20-6b1a2d3c4e5f", _spec(MEMBERS))
    assert plan.namespace == namespace_name("5f1d7c1e-8a3b-4c9e-9f20-6b1a2d3c4e5f")
    assert plan.namespace.startswith("lbaas-amp-")
    by_net = {leg.network_id: leg for leg in plan.legs}
    assert by_net["net-vip"].addresses == ("10.1.0.5/24",)
    assert by_net["net-vip"].host_address == "10.1.0.1/24"
    assert by_net["net-vip"].bridge == bridge_name("net-vip")
    assert by_net["net-m"].addresses == ("10.2.0.5/24",) and by_net["net-m"].host_address is None
    for leg in plan.legs:
        assert max(len(leg.bridge), len(leg.host_end), len(leg.amphora_end)) <= 15


def test_member_address_on_the_vip_network_shares_the_leg() -> None:
    same = MemberNetwork(network_id="net-vip", subnet_cidr="10.1.0.0/24", address="10.1.0.6")
    plan = plan_plumbing("amp", _spec(same))
    assert len(plan.legs) == 1 and plan.legs[0].addresses == ("10.1.0.5/24", "10.1.0.6/24")


def test_apply_builds_the_namespace_and_legs() -> None:
    host = RecordingHostOps()
    plan = plan_plumbing("amp", _spec(MEMBERS))
    apply_plumbing(host, plan, None)
    assert host.namespaces == {plan.namespace}
    for leg in plan.legs:
        assert host.links[leg.bridge].up
        assert host.links[leg.host_end].bridge == leg.bridge
        amp_end = host.links[leg.amphora_end]
        assert amp_end.namespace == plan.namespace and amp_end.up
        assert amp_end.addresses == set(leg.addresses)
    vip_leg = next(leg for leg in plan.legs if leg.network_id == "net-vip")
    assert host.links[vip_leg.bridge].addresses == {"10.1.0.1/24"}


def test_apply_twice_creates_nothing_new() -> None:
    host = RecordingHostOps()
    plan = plan_plumbing("amp", _spec(MEMBERS))
    apply_plumbing(host, plan, None)
    links = {
        name: (link.namespace, link.bridge, set(link.addresses))
        for name, link in host.links.items()
    }
    creations = host.count("create_veth_pair")
    apply_plumbing(host, plan, plan)
    assert host.count("create_veth_pair") == creations
    assert {
        n: (ln.namespace, ln.bridge, set(ln.addresses)) for n, ln in host.links.items()
    } == links


def test_apply_removes_what_the_previous_plan_had() -> None:
    host = RecordingHostOps()
    before = plan_plumbing("amp", _spec(MEMBERS))
    apply_plumbing(host, before, None)
    after = plan_plumbing("amp", _spec(vip="10.1.0.9"))
    apply_plumbing(host, after, before)
    member_leg = next(leg for leg in before.legs if leg.network_id == "net-m")
    assert member_leg.amphora_end not in host.links and member_leg.bridge not in host.links
    vip_leg = after.legs[0]
    assert host.links[vip_leg.amphora_end].addresses == {"10.1.0.9/24"}


def test_remove_keeps_bridges_other_amphorae_use() -> None:
    host = RecordingHostOps()
    one, two = plan_plumbing("one", _spec(MEMBERS)), plan_plumbing("two", _spec(vip="10.1.0.7"))
    apply_plumbing(host, one, None)
    apply_plumbing(host, two, None)
    remove_plumbing(host, one)
    assert one.namespace not in host.namespaces
    assert bridge_name("net-vip") in host.links  # "two" still uses it
    assert bridge_name("net-m") not in host.links
    remove_plumbing(host, two)
    assert host.links == {} and host.namespaces == set()
