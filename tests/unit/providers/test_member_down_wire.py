"""A pool's member-down policy from the graph to the engine's input, on both kernel paths:
the distributed provider's ``L4ListenerSpec`` (read by a node) and the amphora's UDP
listeners (read by the agent's data path). On the wire the field is left out while every
listener keeps, so agents that predate it keep taking specs; asked to cut or reroute, such
an agent refuses the spec (it forbids unknown fields) rather than keeping the flows.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import ValidationError

from lbaas.amphora.datapath import l4_service as amphora_l4_service
from lbaas.fleet.client import _older_amphora
from lbaas.fleet.client_l4 import _older
from lbaas.l4.service import LiveFlowPolicy
from lbaas.l4node.manager import l4_service as node_l4_service
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, MemberDownPolicy, PoolProtocol
from lbaas.model.graph import LoadBalancer
from lbaas.providers.amphora.kernel_spec import split_udp
from lbaas.providers.distributed.translate import service_spec
from lbaas.wire.amphora import SPEC_FORMAT, AmphoraSpec, HaproxyFacts, VipSpec
from lbaas.wire.l4 import L4ServiceSpec
from tests.support.graphs import listener, load_balancer, member, pool


def graph(protocol: PoolProtocol, policy: MemberDownPolicy) -> LoadBalancer:
    kind = ListenerProtocol.UDP if protocol is PoolProtocol.UDP else ListenerProtocol.TCP
    algorithm = (
        LbAlgorithm.SOURCE_IP_PORT if kind is ListenerProtocol.TCP else LbAlgorithm.SOURCE_IP
    )
    the_pool = pool("p", [member("a", "10.9.0.1", 53)], protocol=protocol, algorithm=algorithm)
    return load_balancer(
        [listener("l", kind, 53, default_pool="p")],
        [dataclasses.replace(the_pool, member_down_policy=policy)],
        vip_address="10.9.9.9",
    )


def amphora_spec(lb: LoadBalancer) -> AmphoraSpec:
    _, udp = split_udp(lb)
    return AmphoraSpec(
        spec_format=SPEC_FORMAT,
        version=1,
        loadbalancer_id=lb.id,
        haproxy_config="global\n",
        haproxy_facts=HaproxyFacts(runtime_socket="/x/stats.sock", fixed_digest="d"),
        vip=VipSpec(address="10.9.9.9", subnet_cidr="10.9.9.0/24", network_id="n"),
        udp_listeners=udp,
    )


@pytest.mark.parametrize("policy", list(MemberDownPolicy))
def test_the_node_and_the_amphora_agent_read_the_pools_policy(policy: MemberDownPolicy) -> None:
    node_spec = service_spec(graph(PoolProtocol.TCP, policy), version=1)
    node = node_l4_service(L4ServiceSpec.model_validate_json(node_spec.model_dump_json()), {})
    assert node.listeners[0].live_flows is LiveFlowPolicy(policy.value)
    sent = amphora_spec(graph(PoolProtocol.UDP, policy)).model_dump_json()
    amphora = amphora_l4_service(AmphoraSpec.model_validate_json(sent))
    assert amphora.listeners[0].live_flows is LiveFlowPolicy(policy.value)


def test_the_field_is_sent_only_when_a_listener_does_not_keep() -> None:
    keep = service_spec(graph(PoolProtocol.TCP, MemberDownPolicy.KEEP), version=1)
    body = json.loads(keep.model_dump_json(exclude=_older(keep)))
    assert "member_down" not in body["listeners"][0]
    cut = service_spec(graph(PoolProtocol.TCP, MemberDownPolicy.CUT), version=1)
    body = json.loads(cut.model_dump_json(exclude=_older(cut)))
    assert body["listeners"][0]["member_down"] == "cut"
    kept = amphora_spec(graph(PoolProtocol.UDP, MemberDownPolicy.KEEP))
    body = json.loads(kept.model_dump_json(exclude=_older_amphora(kept)))
    assert "member_down" not in body["udp_listeners"][0]
    rerouted = amphora_spec(graph(PoolProtocol.UDP, MemberDownPolicy.REROUTE))
    body = json.loads(rerouted.model_dump_json(exclude=_older_amphora(rerouted)))
    assert body["udp_listeners"][0]["member_down"] == "reroute"
    # An agent that predates the field: the same models without it refuse the spec.
    del body["udp_listeners"][0]["member_down"]
    AmphoraSpec.model_validate(body)  # what such an agent reads when it is left out
    body["udp_listeners"][0]["unknown_to_it"] = "reroute"
    with pytest.raises(ValidationError):
        AmphoraSpec.model_validate(body)
