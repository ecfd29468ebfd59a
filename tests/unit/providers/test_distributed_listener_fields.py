"""No listener field silently dropped by the distributed provider: a check over the API schema.

Every field the listener API accepts (create or update, read from the schemas, so a new
field fails this test until someone decides what it means here) is in exactly one group:

- ``CARRIED``: changing it changes the spec every node receives (each is varied below and
  the wire body compared, so the claim is checked, not just stated);
- ``NO_DATA_PLANE_MEANING``: bookkeeping, or nested objects the graph create turns into
  pools and policies (checked by their own tests);
- ``NOT_ON_L4_PROTOCOLS``: TLS, HTTP header and HSTS options, which belong to protocols
  this provider refuses (or which the API clears on TCP/UDP listeners, as Octavia does);
- ``KNOWN_GAPS``: accepted on a TCP/UDP listener and not enforced by the kernel engine
  today. Each is varied too and must leave the spec unchanged: a gap closed moves the
  field to ``CARRIED`` instead of leaving a stale entry here.

The amphora provider has no such check yet (its HAProxy rendering carries most fields).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest

from lbaas.api.schemas.listener import ListenerCreate, ListenerUpdate
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.model.graph import Listener, ListenerTimeouts, LoadBalancer
from lbaas.providers.distributed.translate import service_spec
from tests.support.graphs import listener, load_balancer, member, pool

SCHEMA_FIELDS = frozenset(ListenerCreate.model_fields) | frozenset(ListenerUpdate.model_fields)

Change = Callable[[Listener], Listener]


def _timeouts(**changed: int) -> Change:
    return lambda li: dataclasses.replace(li, timeouts=dataclasses.replace(li.timeouts, **changed))


CARRIED: dict[str, Change] = {
    "protocol": lambda li: dataclasses.replace(li, protocol=ListenerProtocol.UDP),
    "protocol_port": lambda li: dataclasses.replace(li, protocol_port=8080),
    "admin_state_up": lambda li: dataclasses.replace(li, admin_state_up=False),
    "default_pool_id": lambda li: dataclasses.replace(li, default_pool_id=None),
    "allowed_cidrs": lambda li: dataclasses.replace(li, allowed_cidrs=("10.1.0.0/16",)),
}
NO_DATA_PLANE_MEANING = frozenset(
    {"name", "description", "tags", "project_id", "tenant_id", "loadbalancer_id"}
    | {"id"}  # a trusted caller's own id for the object (GivenId)
    | {"default_pool", "l7policies"}  # nested create: become pools and L7 policies
)
NOT_ON_L4_PROTOCOLS = frozenset(
    {
        "default_tls_container_ref", "sni_container_refs", "client_ca_tls_container_ref",
        "client_authentication", "client_crl_container_ref", "tls_ciphers", "tls_versions",
        "alpn_protocols", "hsts_max_age", "hsts_include_subdomains", "hsts_preload",
        "insert_headers",
    }
)  # fmt: skip
KNOWN_GAPS: dict[str, Change] = {
    "connection_limit": lambda li: dataclasses.replace(li, connection_limit=10),
    "timeout_client_data": _timeouts(client_data=1000),
    "timeout_member_connect": _timeouts(member_connect=1000),
    "timeout_member_data": _timeouts(member_data=1000),
    "timeout_tcp_inspect": _timeouts(tcp_inspect=1000),
}


def graph(change: Change = lambda li: li) -> LoadBalancer:
    base = listener("t", ListenerProtocol.TCP, 80, default_pool="p")
    assert base.timeouts == ListenerTimeouts()
    backends = [member("a", "10.9.0.1", 8000)]
    return load_balancer(
        [change(base)],
        [pool("p", backends, protocol=PoolProtocol.TCP, algorithm=LbAlgorithm.SOURCE_IP_PORT)],
        vip_address="10.9.9.9",
    )


def wire(lb: LoadBalancer) -> object:
    return json.loads(service_spec(lb, version=1).model_dump_json())


def test_every_schema_field_is_in_exactly_one_group() -> None:
    groups = [set(CARRIED), NO_DATA_PLANE_MEANING, NOT_ON_L4_PROTOCOLS, set(KNOWN_GAPS)]
    assert sum(len(group) for group in groups) == len(set().union(*groups))  # disjoint
    assert set().union(*groups) == SCHEMA_FIELDS


@pytest.mark.parametrize("field", sorted(CARRIED))
def test_a_carried_field_changes_what_the_nodes_receive(field: str) -> None:
    assert wire(graph(CARRIED[field])) != wire(graph())


@pytest.mark.parametrize("field", sorted(KNOWN_GAPS))
def test_a_known_gap_is_still_a_gap(field: str) -> None:
    assert wire(graph(KNOWN_GAPS[field])) == wire(graph())
