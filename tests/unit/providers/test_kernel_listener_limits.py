"""A listener's connection limit and timeouts as the kernel providers translate them.

The shorter data timeout, in whole seconds (rounded up, 0 as the longest), becomes a UDP
listener's idle timeout on both kernel paths; the amphora also carries a connection limit
over 0. The distributed spec leaves the field out while no listener has one, so agents
that predate it keep serving TCP-only load balancers. Real nftables: tests/e2e/l4/
test_l4_limits.py.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import ValidationError

from lbaas.fleet.client_l4 import _older
from lbaas.l4.listener_limits import LONGEST_IDLE_TIMEOUT
from lbaas.l4.service import L4Listener, L4Protocol
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.model.graph import ListenerTimeouts, LoadBalancer
from lbaas.providers.amphora.kernel_spec import split_udp
from lbaas.providers.distributed.translate import service_spec
from lbaas.wire.l4 import L4ListenerSpec, L4ServiceSpec
from tests.support.graphs import listener, load_balancer, member, pool


def graph(
    timeouts: ListenerTimeouts, *protocols: ListenerProtocol, limit: int = -1
) -> LoadBalancer:
    listeners = [
        dataclasses.replace(
            listener(f"l{port}", protocol, port, default_pool="p"),
            timeouts=timeouts,
            connection_limit=limit,
        )
        for port, protocol in enumerate(protocols, start=53)
    ]
    backends = [member("a", "10.9.0.1", 53)]
    pools = [pool("p", backends, protocol=PoolProtocol.UDP, algorithm=LbAlgorithm.SOURCE_IP_PORT)]
    return load_balancer(listeners, pools, vip_address="10.9.9.9")


@pytest.mark.parametrize(
    ("client", "member_ms", "seconds"),
    [
        (50000, 50000, 50),  # Octavia's defaults
        (10000, 0, 10),  # 0 is no timeout: the other one decides
        (0, 0, LONGEST_IDLE_TIMEOUT),
        (60000, 1500, 2),  # rounded up, never cut short
    ],
)
def test_the_shorter_data_timeout_is_a_udp_flows_idle_timeout(
    client: int, member_ms: int, seconds: int
) -> None:
    timeouts = ListenerTimeouts(client_data=client, member_data=member_ms)
    both = graph(timeouts, ListenerProtocol.UDP, ListenerProtocol.TCP)
    udp, tcp = service_spec(both, version=1).listeners
    assert (udp.idle_timeout, tcp.idle_timeout) == (seconds, None)
    (amphora_udp,) = split_udp(both)[1]
    assert amphora_udp.idle_timeout == seconds


@pytest.mark.parametrize(("limit", "carried"), [(-1, None), (0, None), (10, 10)])
def test_the_amphoras_udp_listener_carries_a_limit_over_zero(limit: int, carried: int) -> None:
    (udp,) = split_udp(graph(ListenerTimeouts(), ListenerProtocol.UDP, limit=limit))[1]
    assert udp.connection_limit == carried


def sent_listeners(lb: LoadBalancer) -> list[dict[str, object]]:
    spec = service_spec(lb, version=1)
    listeners: list[dict[str, object]] = json.loads(spec.model_dump_json(exclude=_older(spec)))[
        "listeners"
    ]
    return listeners


def test_the_idle_timeout_is_sent_only_when_a_listener_has_one() -> None:
    tcp_only = sent_listeners(graph(ListenerTimeouts(), ListenerProtocol.TCP))
    assert all("idle_timeout" not in item for item in tcp_only)
    mixed = sent_listeners(graph(ListenerTimeouts(), ListenerProtocol.UDP, ListenerProtocol.TCP))
    assert [item["idle_timeout"] for item in mixed] == [50, None]
    assert (
        L4ServiceSpec.model_validate(
            {"version": 1, "loadbalancer_id": "x", "vip": "10.9.9.9", "listeners": mixed}
        )
        .listeners[0]
        .idle_timeout
        == 50
    )


def test_a_tcp_listener_takes_no_idle_timeout() -> None:
    spec = service_spec(graph(ListenerTimeouts(), ListenerProtocol.TCP), version=1).listeners[0]
    with pytest.raises(ValidationError, match="for UDP listeners only"):
        L4ListenerSpec.model_validate({**spec.model_dump(), "idle_timeout": 5})
    with pytest.raises(ValueError, match="for UDP listeners only"):
        L4Listener(L4Protocol.TCP, 80, (), idle_timeout=5)
