"""Networks mapped onto existing bridges (agent.bridge_mappings) and namespace prefixes."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_fakes import make_config, spec_fields

from lbaas.amphora.plumbing import apply_plumbing, bridge_name, plan_plumbing, remove_plumbing
from lbaas.host.base import HostOpsError
from lbaas.host.recording import RecordingHostOps
from lbaas.wire.amphora import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec

MAPPINGS = {"net-vip": "vip0", "net-m": "mem0"}


def _spec() -> AmphoraSpec:
    member = MemberNetwork(
        network_id="net-m", subnet_cidr="10.2.0.0/24", address="10.2.0.5", host_address="10.2.0.1"
    )
    other = MemberNetwork(network_id="net-o", subnet_cidr="10.3.0.0/24", address="10.3.0.5")
    return AmphoraSpec(
        version=1,
        loadbalancer_id="lb",
        **spec_fields(make_config(Path("/x"))),
        vip=VipSpec(address="10.1.0.5", subnet_cidr="10.1.0.0/24", network_id="net-vip"),
        network=NetworkSpec(vip_host_address="10.1.0.1", member_networks=(member, other)),
    )


def _host_with_uplinks() -> RecordingHostOps:
    host = RecordingHostOps()
    for uplink in MAPPINGS.values():
        host.create_bridge(uplink)
    return host


def test_mapped_networks_use_the_uplink_bridge_without_the_gateway_address() -> None:
    plan = plan_plumbing("amp", _spec(), namespace_prefix="lab-h1-", bridge_mappings=MAPPINGS)
    assert plan.namespace.startswith("lab-h1-amp-")
    legs = {leg.network_id: leg for leg in plan.legs}
    assert (legs["net-vip"].bridge, legs["net-vip"].host_address) == ("vip0", None)
    assert (legs["net-m"].bridge, legs["net-m"].host_address) == ("mem0", None)
    assert legs["net-vip"].mapped and legs["net-m"].mapped
    # An unmapped network keeps the agent's own bridge, as without mappings.
    assert legs["net-o"].bridge == bridge_name("net-o") and not legs["net-o"].mapped
    assert plan.default_gateway == "10.1.0.1"


def test_without_mappings_nothing_changes() -> None:
    plan = plan_plumbing("amp", _spec())
    assert plan.namespace.startswith("lbaas-amp-") and plan.default_gateway is None
    assert {leg.bridge for leg in plan.legs} == {
        bridge_name(n) for n in ("net-vip", "net-m", "net-o")
    }


def test_apply_plugs_into_uplinks_routes_via_the_gateway_and_remove_keeps_them() -> None:
    host = _host_with_uplinks()
    bridges_made = host.count("create_bridge")
    plan = plan_plumbing("amp", _spec(), namespace_prefix="lab-h1-", bridge_mappings=MAPPINGS)
    apply_plumbing(host, plan, None)
    assert host.count("create_bridge") == bridges_made + 1  # only the unmapped network's
    assert host.links["vip0"].addresses == set() and host.links["mem0"].addresses == set()
    for leg in plan.legs:
        assert host.links[leg.host_end].bridge == leg.bridge
    route = ("ip", "route", "replace", "default", "via", "10.1.0.1")
    assert ("run_in_namespace", (plan.namespace, route)) in host.calls
    remove_plumbing(host, plan)
    assert "vip0" in host.links and "mem0" in host.links
    assert bridge_name("net-o") not in host.links


def test_a_mapping_to_a_missing_bridge_is_a_clear_error() -> None:
    plan = plan_plumbing("amp", _spec(), bridge_mappings={"net-vip": "nosuch0"})
    with pytest.raises(HostOpsError, match="nosuch0.*does not exist"):
        apply_plumbing(RecordingHostOps(), plan, None)
