"""The smallest amphora spec an agent client sends: for tests of the wire, not of HAProxy."""

from __future__ import annotations

from collections.abc import Sequence

from lbaas.wire.amphora import SPEC_FORMAT, AmphoraSpec, HaproxyFacts, VipSpec
from lbaas.wire.datapath import UdpListener


def minimal_amphora_spec(udp_listeners: Sequence[UdpListener] = ()) -> AmphoraSpec:
    """One load balancer ("lb") on 127.0.10.5 with an empty HAProxy configuration."""
    return AmphoraSpec(
        spec_format=SPEC_FORMAT,
        version=1,
        loadbalancer_id="lb",
        haproxy_config="global\n",
        haproxy_facts=HaproxyFacts(runtime_socket="/x/stats.sock", fixed_digest="test:x"),
        vip=VipSpec(address="127.0.10.5", subnet_cidr="127.0.10.0/24", network_id="n"),
        udp_listeners=tuple(udp_listeners),
    )
