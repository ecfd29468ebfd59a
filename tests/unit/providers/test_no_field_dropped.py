"""No load balancer, listener or pool field is silently dropped by any provider.

The fields are read from the API's request schemas (create and update), so a new field
fails ``test_every_accepted_field_is_classified`` until someone decides what it means for
each provider. A field is, for one provider, in exactly one of:

- ``NO_DATA_PLANE_MEANING`` (the one declared place, the same for every provider, each
  with its reason): bookkeeping, nested creates, or choices made before any data plane
  exists (which provider, where the VIP is allocated);
- the provider's ``carried``: a distinctive value is set in the graph the provider is
  given and looked for in what it renders (HAProxy's configuration, the kernel part of
  the amphora spec and the nftables table of its UDP listeners; for the distributed
  provider and the L4 tier, the spec every node loads with the node's nftables table and
  the tier's DSR table), or, for a value with nothing to look for (a flag), the rendering
  must change;
- the provider's ``refused``: the provider's declared capabilities refuse the requests
  where the field would mean something (each claim is checked against the capabilities).

There is no group for "accepted and not enforced". A field carried on some of a
provider's listener protocols only is, for each other protocol, either carried there too
(``also_carried``, with a graph of that protocol) or refused there unless at Octavia's
default (``refused_on``, checked on the capabilities as ``refused`` is).

Renderers only: no HAProxy, no nft, no database. ``vip_sg_ids`` reaches the graph as each
listener's source networks (``lbaas.model.security_rules``, applied by the graph loader;
``tests/api/test_security_groups.py`` checks that step).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lbaas.amphora.datapath import udp_service
from lbaas.api.builders.loadbalancer import reject_unsupported_vip_options
from lbaas.api.schemas.listener import ListenerCreate, ListenerUpdate
from lbaas.api.schemas.loadbalancer import LoadBalancerCreate, LoadBalancerUpdate
from lbaas.api.schemas.pool import PoolCreate, PoolUpdate
from lbaas.errors import InvalidInput
from lbaas.l4.nft import render_full
from lbaas.l4node.manager import l4_service
from lbaas.model.enums import (
    ClientAuthentication,
    LbAlgorithm,
    ListenerProtocol,
    MemberDownPolicy,
    PersistenceType,
    PoolProtocol,
)
from lbaas.model.graph import LoadBalancer
from lbaas.model.security_rules import IPV4, IngressRule, listener_sources
from lbaas.providers.amphora.capabilities import amphora_capabilities
from lbaas.providers.amphora.kernel_spec import split_udp, vip_filter
from lbaas.providers.base import LISTENER_OPTIONS, ProviderCapabilities
from lbaas.providers.distributed.capabilities import DISTRIBUTED_CAPABILITIES
from lbaas.providers.distributed.translate import service_spec
from lbaas.render.haproxy import HaproxyContext, render_haproxy_config
from lbaas.render.haproxy.tls import ListenerTlsFiles, PoolTlsFiles
from lbaas.tier import dsr
from tests.support.graphs import listener, load_balancer, member, persistence, pool

SCHEMAS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "loadbalancer": (LoadBalancerCreate, LoadBalancerUpdate),
    "listener": (ListenerCreate, ListenerUpdate),
    "pool": (PoolCreate, PoolUpdate),
}
BOOKKEEPING = "bookkeeping: shown by the API, never part of what the data plane does"
NESTED = "a nested create: becomes objects of their own, checked as those objects"
OWNER = "names the parent object; the rendering is of that parent's tree"

# The one declared place: what no provider's data plane has anything to do with, and why.
NO_DATA_PLANE_MEANING: dict[str, dict[str, str]] = {
    "loadbalancer": {
        **dict.fromkeys(
            ("id", "name", "description", "tags", "project_id", "tenant_id"), BOOKKEEPING
        ),
        **dict.fromkeys(("listeners", "pools"), NESTED),
        "provider": "chooses the provider itself",
        "flavor_id": "a set of provider options, each checked by the API against the "
        "provider's declared flavor_keys and by that provider's own flavor tests",
        "availability_zone": "where an amphora is placed, not what it does",
        **dict.fromkeys(
            ("vip_subnet_id", "vip_network_id", "vip_port_id"),
            "where the VIP is allocated; the address it leads to is vip_address's check",
        ),
    },
    "listener": {
        **dict.fromkeys(
            ("id", "name", "description", "tags", "project_id", "tenant_id"), BOOKKEEPING
        ),
        **dict.fromkeys(("default_pool", "l7policies"), NESTED),
        "loadbalancer_id": OWNER,
    },
    "pool": {
        **dict.fromkeys(
            ("id", "name", "description", "tags", "project_id", "tenant_id"), BOOKKEEPING
        ),
        **dict.fromkeys(("loadbalancer_id", "listener_id"), OWNER),
    },
}

Change = Callable[[LoadBalancer], LoadBalancer]


@dataclass(frozen=True)
class Carried:
    change: Change
    needle: str | None = None  # looked for in the rendering; None: the rendering changes
    base: LoadBalancer | None = None  # the graph changed, if not the plane's own


def on_listener(**values: Any) -> Change:
    def change(lb: LoadBalancer) -> LoadBalancer:
        first, *rest = lb.listeners
        return dataclasses.replace(lb, listeners=(dataclasses.replace(first, **values), *rest))

    return change


def on_timeouts(**values: int) -> Change:
    def change(lb: LoadBalancer) -> LoadBalancer:
        timeouts = dataclasses.replace(lb.listeners[0].timeouts, **values)
        return on_listener(timeouts=timeouts)(lb)

    return change


def on_pool(**values: Any) -> Change:
    def change(lb: LoadBalancer) -> LoadBalancer:
        first, *rest = lb.pools
        return dataclasses.replace(lb, pools=(dataclasses.replace(first, **values), *rest))

    return change


def on_lb(**values: Any) -> Change:
    return lambda lb: dataclasses.replace(lb, **values)


def with_groups(lb: LoadBalancer) -> LoadBalancer:
    """The graph of ``lb`` with a security group allowing TCP from 10.78.0.0/16."""
    rules = [IngressRule(IPV4, 6, remote_ip_prefix="10.78.0.0/16")]
    listeners = tuple(
        dataclasses.replace(
            li, allowed_cidrs=listener_sources(rules, li.protocol, li.protocol_port, 4)
        )
        for li in lb.listeners
    )
    return dataclasses.replace(lb, listeners=listeners)


def moved_vip(lb: LoadBalancer) -> LoadBalancer:
    return dataclasses.replace(lb, vip=dataclasses.replace(lb.vip, address="10.79.1.2"))


def udp_idle_timeouts(base: LoadBalancer) -> dict[tuple[str, str], Carried]:
    """The two data timeouts as a UDP listener's flows' idle timeout: the shorter, in
    seconds, in the kernel's timeout policy."""
    return {
        ("listener", "timeout_client_data"): Carried(
            on_timeouts(client_data=43000), "unreplied: 43,", base
        ),
        ("listener", "timeout_member_data"): Carried(
            on_timeouts(member_data=42000), "unreplied: 42,", base
        ),
    }


GROUPS = Carried(with_groups, "10.78.0.0/16")
VIP_ADDRESS = Carried(moved_vip, "10.79.1.2")
LB_DOWN = Carried(on_lb(admin_state_up=False))


@dataclass(frozen=True)
class Refused:
    """Why the provider never gets the field with a meaning, checked on its capabilities."""

    why: str
    holds: Callable[[ProviderCapabilities], bool]


def _qos_refused(caps: ProviderCapabilities) -> bool:
    try:
        reject_unsupported_vip_options("00000000-0000-4000-8000-000000000000")
    except InvalidInput:
        return True
    return False


QOS_REFUSED = Refused("refused by the API for every provider (VIP_QOS_REFUSAL)", _qos_refused)
ONE_VIP = Refused(
    "the graph carries the primary VIP only, so a provider that binds more must declare "
    "it (ProviderCapabilities.additional_vips); the others refuse them",
    lambda caps: (
        not caps.additional_vips
        and "additional_vips" not in {f.name for f in dataclasses.fields(LoadBalancer)}
    ),
)


def refused_on(name: str, protocol: ListenerProtocol) -> Refused:
    """A listener option the provider enforces elsewhere and refuses on ``protocol``."""
    return Refused(
        f"only Octavia's default is accepted on {protocol.value} listeners",
        lambda caps: protocol not in caps.listener_options.get(name, frozenset()),
    )


def refused_everywhere(name: str) -> Refused:
    return Refused(
        "only Octavia's default is accepted, on every protocol",
        lambda caps: not caps.listener_options.get(name),
    )


@dataclass(frozen=True)
class Plane:
    render: Callable[[LoadBalancer], str]
    base: LoadBalancer
    capabilities: ProviderCapabilities
    carried: Mapping[tuple[str, str], Carried]
    refused: Mapping[tuple[str, str], Refused] = field(default_factory=dict)
    # A carried field carried on another protocol too (its own graph), or refused there.
    also_carried: Mapping[tuple[str, str], Carried] = field(default_factory=dict)
    refused_on: Mapping[tuple[str, str], Refused] = field(default_factory=dict)


# -- amphora: HAProxy's configuration and the kernel part of the spec ---------------------

TLS_FILES = ListenerTlsFiles(
    "/run/amp/tls/web.crt-list", "/run/amp/tls/ca.pem", "/run/amp/tls/crl.pem"
)


def amphora_render(lb: LoadBalancer) -> str:
    haproxy_graph, udp = split_udp(lb)
    client = PoolTlsFiles("/run/amp/tls/client.pem")
    pools_tls: dict[str, PoolTlsFiles] = {p.id: client for p in lb.pools if p.tls_enabled}
    ctx = HaproxyContext(
        bind_address=lb.vip.address,
        runtime_socket="/run/amp/haproxy.sock",
        state_dir="/run/amp",
        listener_tls={li.id: TLS_FILES for li in lb.listeners},
        pool_tls=pools_tls,
    )
    kernel = {
        "vip_filter": json.loads(vip_filter(lb).model_dump_json()),
        "udp": [json.loads(u.model_dump_json()) for u in udp],
    }
    service = udp_service(lb.id, lb.vip.address, udp)
    tables = render_full(service, {li.name: li.table() for li in service.listeners})
    text = render_haproxy_config(haproxy_graph, ctx)
    return "\n".join((text, json.dumps(kernel, sort_keys=True), tables))


AMPHORA_BASE = load_balancer(
    [
        dataclasses.replace(
            listener("web", ListenerProtocol.TERMINATED_HTTPS, 443, default_pool="p"),
            hsts_max_age=100,
            tls_ciphers="ECDHE-RSA-AES128-GCM-SHA256",
            tls_versions=("TLSv1.2", "TLSv1.3"),
            alpn_protocols=("h2", "http/1.1"),
        )
    ],
    [
        dataclasses.replace(
            pool("p", [member("m", "10.9.0.1", 8000)], tls_enabled=True),
            tls_ciphers="ECDHE-RSA-AES128-GCM-SHA256",
            tls_versions=("TLSv1.2", "TLSv1.3"),
            alpn_protocols=("h2", "http/1.1"),
        )
    ],
    vip_address="10.9.9.9",
)
TLS_E2E = Path(__file__).parents[2] / "e2e" / "amphora" / "test_tls_termination.py"


def _sent_by_tls_e2e(name: str) -> Refused:
    """A key-manager reference: the agent writes its material as the files HAProxy's
    configuration names, shown with real certificates and clients end to end. The check
    here: that test still sends the field."""
    text = TLS_E2E.read_text()
    return Refused(
        f"carried as files, end to end in {TLS_E2E.name}",
        lambda caps: f'"{name}"' in text or f"{name}=" in text,
    )


# A UDP listener of an amphora in netns mode: balanced by the kernel (``split_udp``).
AMPHORA_UDP = load_balancer(
    [listener("dns", ListenerProtocol.UDP, 53, default_pool="u")],
    [pool("u", [member("d", "10.9.0.2", 53)], protocol=PoolProtocol.UDP)],
    vip_address="10.9.9.9",
)
AMPHORA = Plane(
    render=amphora_render,
    base=AMPHORA_BASE,
    capabilities=amphora_capabilities(netns=True),
    carried={
        ("loadbalancer", "admin_state_up"): LB_DOWN,
        ("loadbalancer", "vip_address"): VIP_ADDRESS,
        ("loadbalancer", "vip_sg_ids"): GROUPS,
        ("listener", "protocol"): Carried(on_listener(protocol=ListenerProtocol.HTTP)),
        ("listener", "protocol_port"): Carried(on_listener(protocol_port=8443), ":8443"),
        ("listener", "admin_state_up"): Carried(on_listener(admin_state_up=False)),
        ("listener", "connection_limit"): Carried(on_listener(connection_limit=4321), "4321"),
        ("listener", "default_pool_id"): Carried(on_listener(default_pool_id=None)),
        ("listener", "allowed_cidrs"): Carried(
            on_listener(allowed_cidrs=("10.77.0.0/16",)), "10.77.0.0/16"
        ),
        ("listener", "insert_headers"): Carried(
            on_listener(insert_headers={"X-Forwarded-Port": "true"}), "X-Forwarded-Port"
        ),
        ("listener", "timeout_client_data"): Carried(on_timeouts(client_data=43210), "43210"),
        ("listener", "timeout_member_connect"): Carried(on_timeouts(member_connect=43211), "43211"),
        ("listener", "timeout_member_data"): Carried(on_timeouts(member_data=43212), "43212"),
        ("listener", "timeout_tcp_inspect"): Carried(on_timeouts(tcp_inspect=43213), "43213"),
        ("listener", "tls_ciphers"): Carried(
            on_listener(tls_ciphers="ECDHE-ECDSA-CHACHA20-POLY1305"), "ECDHE-ECDSA-CHACHA20"
        ),
        ("listener", "tls_versions"): Carried(on_listener(tls_versions=("TLSv1.3",))),
        ("listener", "alpn_protocols"): Carried(
            on_listener(alpn_protocols=("http/1.0",)), "http/1.0"
        ),
        ("listener", "client_authentication"): Carried(
            on_listener(client_authentication=ClientAuthentication.OPTIONAL), "verify optional"
        ),
        ("listener", "hsts_max_age"): Carried(on_listener(hsts_max_age=4242), "max-age=4242"),
        ("listener", "hsts_include_subdomains"): Carried(
            on_listener(hsts_include_subdomains=True), "includeSubDomains"
        ),
        ("listener", "hsts_preload"): Carried(on_listener(hsts_preload=True), "preload"),
        ("pool", "protocol"): Carried(on_pool(protocol=PoolProtocol.PROXY), "send-proxy"),
        ("pool", "lb_algorithm"): Carried(
            on_pool(lb_algorithm=LbAlgorithm.LEAST_CONNECTIONS), "leastconn"
        ),
        ("pool", "admin_state_up"): Carried(on_pool(admin_state_up=False)),
        ("pool", "session_persistence"): Carried(
            on_pool(session_persistence=persistence(PersistenceType.APP_COOKIE, "lbsess")),
            "lbsess",
        ),
        ("pool", "tls_enabled"): Carried(on_pool(tls_enabled=False)),
        ("pool", "tls_ciphers"): Carried(
            on_pool(tls_ciphers="ECDHE-ECDSA-CHACHA20-POLY1305"), "ECDHE-ECDSA-CHACHA20"
        ),
        ("pool", "tls_versions"): Carried(on_pool(tls_versions=("TLSv1.3",))),
        ("pool", "alpn_protocols"): Carried(on_pool(alpn_protocols=("http/1.0",)), "http/1.0"),
        ("pool", "lbaas_member_down_policy"): Carried(
            on_pool(member_down_policy=MemberDownPolicy.CUT), "on-marked-down shutdown-sessions"
        ),
    },
    refused={
        **{
            ("listener", name): _sent_by_tls_e2e(name)
            for name in (
                "default_tls_container_ref",
                "sni_container_refs",
                "client_ca_tls_container_ref",
                "client_crl_container_ref",
            )
        },
        **{
            ("pool", name): _sent_by_tls_e2e(name)
            for name in ("tls_container_ref", "ca_tls_container_ref", "crl_container_ref")
        },
        ("loadbalancer", "vip_qos_policy_id"): QOS_REFUSED,
        ("loadbalancer", "additional_vips"): ONE_VIP,
    },
    # The kernel's UDP balancing: a connection limit and the flows' idle timeout (the
    # shorter of the two data timeouts, in seconds), nothing to connect or inspect.
    also_carried={
        ("listener", "connection_limit"): Carried(
            on_listener(connection_limit=4321), "ct count over 4321", AMPHORA_UDP
        ),
        **udp_idle_timeouts(AMPHORA_UDP),
    },
    refused_on={
        ("listener", name): refused_on(name, ListenerProtocol.UDP)
        for name in ("timeout_member_connect", "timeout_tcp_inspect")
    },
)

# -- distributed (and the L4 tier, whose nodes load the same spec) ------------------------


def distributed_render(lb: LoadBalancer) -> str:
    """The spec a node is sent, the node's nftables table, and the tier's DSR table."""
    spec = service_spec(lb, version=1)
    service = l4_service(spec, {})
    tables = {li.name: li.table() for li in service.listeners}
    return "\n".join((spec.model_dump_json(), render_full(service, tables), dsr.render([service])))


def one_listener(protocol: ListenerProtocol, port: int, member_port: int) -> LoadBalancer:
    """A distributed load balancer: one listener, its pool (SOURCE_IP_PORT), one member."""
    backends = [member("m", "10.9.0.1", member_port)]
    pool_protocol = PoolProtocol(protocol.value)
    tree = pool("p", backends, protocol=pool_protocol, algorithm=LbAlgorithm.SOURCE_IP_PORT)
    name = protocol.value.lower()
    return load_balancer(
        [listener(name, protocol, port, default_pool="p")], [tree], vip_address="10.9.9.9"
    )


DISTRIBUTED_UDP = one_listener(ListenerProtocol.UDP, 53, 53)
DISTRIBUTED_BASE = one_listener(ListenerProtocol.TCP, 80, 8000)
L7_PROTOCOLS = frozenset(
    {ListenerProtocol.HTTP, ListenerProtocol.HTTPS, ListenerProtocol.TERMINATED_HTTPS,
     ListenerProtocol.PROMETHEUS}
)  # fmt: skip


def _no_l7_listeners(caps: ProviderCapabilities) -> bool:
    return not caps.listener_protocols & L7_PROTOCOLS


def _no_pool_tls(caps: ProviderCapabilities) -> bool:
    return not caps.pool_tls_protocols


ONLY_ON_L7 = Refused(
    "TLS, HTTP header and HSTS options mean something only on HTTP-family listeners, "
    "which this provider refuses",
    _no_l7_listeners,
)
ONLY_WITH_POOL_TLS = Refused(
    "re-encryption to members: the provider declares no pool_tls_protocols, so "
    "tls_enabled is refused and these options never apply",
    _no_pool_tls,
)
DISTRIBUTED = Plane(
    render=distributed_render,
    base=DISTRIBUTED_BASE,
    capabilities=DISTRIBUTED_CAPABILITIES,
    carried={
        ("loadbalancer", "admin_state_up"): LB_DOWN,
        ("loadbalancer", "vip_address"): VIP_ADDRESS,
        ("loadbalancer", "vip_sg_ids"): GROUPS,
        ("listener", "protocol"): Carried(on_listener(protocol=ListenerProtocol.UDP), "udp"),
        ("listener", "protocol_port"): Carried(on_listener(protocol_port=8443), "8443"),
        ("listener", "admin_state_up"): Carried(on_listener(admin_state_up=False)),
        ("listener", "default_pool_id"): Carried(on_listener(default_pool_id=None)),
        ("listener", "allowed_cidrs"): Carried(
            on_listener(allowed_cidrs=("10.77.0.0/16",)), "10.77.0.0/16"
        ),
        ("pool", "lb_algorithm"): Carried(on_pool(lb_algorithm=LbAlgorithm.SOURCE_IP)),
        ("pool", "admin_state_up"): Carried(on_pool(admin_state_up=False)),
        ("pool", "session_persistence"): Carried(
            on_pool(session_persistence=persistence(PersistenceType.SOURCE_IP))
        ),
        ("pool", "lbaas_member_down_policy"): Carried(
            on_pool(member_down_policy=MemberDownPolicy.CUT), '"member_down":"cut"'
        ),
        **udp_idle_timeouts(DISTRIBUTED_UDP),
    },
    refused_on={
        ("listener", name): refused_on(name, ListenerProtocol.TCP)
        for name in ("timeout_client_data", "timeout_member_data")
    },
    refused={
        # Each node balances its own clients (no node sees a listener's whole count); the
        # kernel has no member connection of its own to time, and inspects no content.
        **{
            ("listener", name): refused_everywhere(name)
            for name in ("connection_limit", "timeout_member_connect", "timeout_tcp_inspect")
        },
        **{
            ("listener", name): ONLY_ON_L7
            for name in (
                "default_tls_container_ref",
                "sni_container_refs",
                "client_ca_tls_container_ref",
                "client_authentication",
                "client_crl_container_ref",
                "tls_ciphers",
                "tls_versions",
                "alpn_protocols",
                "hsts_max_age",
                "hsts_include_subdomains",
                "hsts_preload",
                "insert_headers",
            )
        },  # fmt: skip
        **{
            ("pool", name): ONLY_WITH_POOL_TLS
            for name in (
                "tls_enabled",
                "tls_container_ref",
                "ca_tls_container_ref",
                "crl_container_ref",
                "tls_ciphers",
                "tls_versions",
                "alpn_protocols",
            )
        },  # fmt: skip
        ("pool", "protocol"): Refused(
            "a pool's protocol must be its listener's (TCP or UDP here), which is carried",
            lambda caps: caps.pool_protocols == {PoolProtocol.TCP, PoolProtocol.UDP},
        ),
        ("loadbalancer", "vip_qos_policy_id"): QOS_REFUSED,
        ("loadbalancer", "additional_vips"): ONE_VIP,
    },
)

PLANES = {"amphora": AMPHORA, "distributed": DISTRIBUTED}


def schema_fields() -> set[tuple[str, str]]:
    return {
        (kind, name)
        for kind, models in SCHEMAS.items()
        for model in models
        for name in model.model_fields
    }


@pytest.mark.parametrize("provider", sorted(PLANES))
def test_every_accepted_field_is_classified(provider: str) -> None:
    plane = PLANES[provider]
    groups = [
        {(kind, name) for kind, names in NO_DATA_PLANE_MEANING.items() for name in names},
        set(plane.carried),
        set(plane.refused),
    ]
    assert sum(len(g) for g in groups) == len(set().union(*groups)), "a field in two groups"
    classified: set[tuple[str, str]] = set().union(*groups)
    assert schema_fields() - classified == set(), "accepted, not classified"
    assert classified - schema_fields() == set(), "classified, no longer accepted"
    assert set(plane.also_carried) | set(plane.refused_on) <= set(plane.carried)


@pytest.mark.parametrize("provider", sorted(PLANES))
def test_every_listener_option_is_settled_on_every_protocol(provider: str) -> None:
    """A listener option carried on some protocols is carried or refused on the others."""
    plane = PLANES[provider]
    for name in LISTENER_OPTIONS:
        key = ("listener", name)
        if key in plane.refused:
            continue
        enforced_on = plane.capabilities.listener_options.get(name, frozenset())
        others = plane.capabilities.listener_protocols - enforced_on
        assert others == set() or key in plane.also_carried or key in plane.refused_on, name


def _cases(part: str) -> list[tuple[str, tuple[str, str]]]:
    return [
        (provider, key)
        for provider, plane in sorted(PLANES.items())
        for key in sorted(getattr(plane, part))
    ]


def _reaches(plane: Plane, carried: Carried) -> None:
    base = plane.base if carried.base is None else carried.base
    before, after = plane.render(base), plane.render(carried.change(base))
    assert after != before
    if carried.needle is not None:
        assert carried.needle not in before
        assert carried.needle in after


@pytest.mark.parametrize(("provider", "key"), _cases("carried"))
def test_a_carried_field_reaches_the_rendering(provider: str, key: tuple[str, str]) -> None:
    _reaches(PLANES[provider], PLANES[provider].carried[key])


@pytest.mark.parametrize(("provider", "key"), _cases("also_carried"))
def test_a_field_carried_on_another_protocol_reaches_that_rendering(
    provider: str, key: tuple[str, str]
) -> None:
    _reaches(PLANES[provider], PLANES[provider].also_carried[key])


@pytest.mark.parametrize(("provider", "key"), _cases("refused") + _cases("refused_on"))
def test_a_refusal_holds_for_the_providers_capabilities(
    provider: str, key: tuple[str, str]
) -> None:
    plane = PLANES[provider]
    refusal = plane.refused.get(key) or plane.refused_on[key]
    assert refusal.holds(plane.capabilities), refusal.why


def test_the_amphoras_udp_listeners_carry_the_member_down_policy() -> None:
    """The amphora's base graph has no UDP listener: its kernel part is checked here."""
    reroute = on_pool(member_down_policy=MemberDownPolicy.REROUTE)(AMPHORA_UDP)
    assert '"member_down": "reroute"' in amphora_render(reroute)
    assert '"member_down": "keep"' in amphora_render(AMPHORA_UDP)
