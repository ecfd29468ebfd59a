"""allowed_cidrs through the distributed provider: graph -> wire -> every node's nftables.

The provider puts a listener's networks on its ``L4ListenerSpec``; a node's real manager
turns them into the interval set the L4 engine checks before balancing. On the wire the
field is left out while no listener has networks, so agents that predate it keep taking
specs; once one does, such an agent refuses the spec (it forbids unknown fields) rather
than balancing every source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.fleet.client_l4 import _older
from lbaas.l4 import nft
from lbaas.l4.service import L4Listener, L4Protocol
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.model.graph import LoadBalancer
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.providers.distributed.translate import service_spec
from lbaas.wire.l4 import L4ListenerSpec, L4ServiceSpec
from tests.support.graphs import listener, load_balancer, member, pool

from .test_distributed_provider import Fleet

CIDRS = ("10.1.0.0/16", "192.0.2.7/32")


def graph(cidrs: tuple[str, ...]) -> LoadBalancer:
    return load_balancer(
        [
            listener("t", ListenerProtocol.TCP, 80, default_pool="p", allowed_cidrs=cidrs),
            listener("u", ListenerProtocol.UDP, 53, default_pool="p"),
        ],
        [
            pool(
                "p",
                [member("a", "10.9.0.1", 8000)],
                protocol=PoolProtocol.TCP,
                algorithm=LbAlgorithm.SOURCE_IP_PORT,
            )
        ],
        vip_address="10.9.9.9",
    )


def sent_body(spec: L4ServiceSpec) -> dict[str, object]:
    """The JSON ``L4AgentClient.put_l4`` sends for ``spec``."""
    return dict(json.loads(spec.model_dump_json(exclude=_older(spec))))


def test_the_spec_carries_each_listeners_networks() -> None:
    tcp, udp = service_spec(graph(CIDRS), version=1).listeners
    assert (tcp.allowed_cidrs, udp.allowed_cidrs) == (CIDRS, ())


def test_every_node_drops_other_sources_before_balancing(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, 2)
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    provider = DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)
    lb = graph(CIDRS)
    provider.apply(lb, Claim(lb.id, generation=1, owner="w", attempts=0, rebuild=False))
    for fake in fleet.fakes.values():
        text = fake.ops.loaded[-1]
        allow = nft.allow_set_name(lb.id, L4Listener(L4Protocol.TCP, 80, ()))
        drop = f"ip daddr 10.9.9.9 meta l4proto tcp th dport 80 ip saddr != @{allow} drop"
        assert drop in text and text.index(drop) < text.index("dnat ip to jhash")
        assert "10.1.0.0/16," in text and "192.0.2.7/32 }" in text
        assert "@a_" not in text.replace(f"@{allow}", "")  # the UDP listener has no set


def test_the_field_is_sent_only_when_some_listener_has_networks() -> None:
    plain = sent_body(service_spec(graph(()), version=1))
    assert all("allowed_cidrs" not in item for item in plain["listeners"])  # type: ignore[attr-defined]
    restricted = sent_body(service_spec(graph(CIDRS), version=1))
    listeners = restricted["listeners"]
    assert [item["allowed_cidrs"] for item in listeners] == [list(CIDRS), []]  # type: ignore[attr-defined]
    assert L4ServiceSpec.model_validate(restricted).listeners[0].allowed_cidrs == CIDRS


def test_a_network_that_does_not_parse_is_refused_on_the_wire() -> None:
    spec = service_spec(graph(CIDRS), version=1).listeners[0]
    with pytest.raises(ValidationError, match="does not appear to be an IPv4 or IPv6 network"):
        L4ListenerSpec.model_validate({**spec.model_dump(), "allowed_cidrs": ["10.1.0.0/33"]})
