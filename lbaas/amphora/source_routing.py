"""Replies leave by the leg their request came in on: a routing table per leg, a rule per address.

An amphora in netns mode has a leg on the VIP network and one on each member network. With
the main table alone, a reply to a client outside every connected subnet leaves by the one
default route, whatever leg the request arrived on: a health check or a client reaching
the member-leg address from beyond its gateway would be answered through the VIP network,
where the path back is asymmetric and a stateful firewall or ``rp_filter`` drops it.

So, as a real amphora does, each leg gets its own table (``LEG_TABLE_FIRST`` + the leg's
index): the leg's subnets, and a default route via the leg's gateway when its subnet has
one. A rule ``from <address> lookup <table>`` per address of the amphora (the VIP and each
member-leg address) sends what the amphora sends from that address by its own leg. The
main table keeps the connected routes and gets a default route via the VIP subnet's
gateway, for connections the amphora opens itself (HAProxy to members beyond their
subnets). ``plan_routing`` is pure; ``apply_routing`` makes the namespace match it.
IPv4 only: IPv6 addresses of a leg get no table or rule (their connected routes remain).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from lbaas.amphora.plumbing import AmphoraPlumbing, Leg
from lbaas.host.base import HostOps
from lbaas.host.routing import RULE_PRIORITY_FIRST, Route, SourceRule

LEG_TABLE_FIRST = 100


@dataclass(frozen=True)
class RoutingPlan:
    namespace: str
    main: tuple[Route, ...]
    tables: tuple[tuple[int, tuple[Route, ...]], ...]
    rules: tuple[SourceRule, ...]


def _is_ipv4(address: str) -> bool:
    return ipaddress.ip_interface(address).version == 4


def _leg_routes(leg: Leg) -> tuple[Route, ...]:
    routes = []
    for address in filter(_is_ipv4, leg.addresses):
        interface = ipaddress.ip_interface(address)
        routes.append(Route(str(interface.network), leg.amphora_end, source=str(interface.ip)))
    if leg.gateway is not None and _is_ipv4(leg.gateway):
        routes.append(Route("default", leg.amphora_end, gateway=leg.gateway))
    # One route per subnet: two addresses on one subnet share it (the first is its source).
    unique = {(route.destination, route.gateway): route for route in reversed(routes)}
    return tuple(sorted(unique.values(), key=lambda r: (r.destination == "default", r.destination)))


def plan_routing(plumbing: AmphoraPlumbing, vip_address: str, vip_network_id: str) -> RoutingPlan:
    """Tables and rules for ``plumbing``; the VIP's rule comes first."""
    tables = []
    rules: list[SourceRule] = []
    main: tuple[Route, ...] = ()
    sources: list[tuple[str, int]] = []
    for index, leg in enumerate(plumbing.legs):
        table = LEG_TABLE_FIRST + index
        tables.append((table, _leg_routes(leg)))
        for address in filter(_is_ipv4, leg.addresses):
            source = str(ipaddress.ip_interface(address).ip)
            sources.append((source, table))
        # The plumbing's own default (a mapped VIP network's router) when the spec names
        # no gateway: the main table must keep it, not lose it to this sync.
        gateway = leg.gateway or plumbing.default_gateway
        if leg.network_id == vip_network_id and gateway is not None and _is_ipv4(gateway):
            main = (Route("default", leg.amphora_end, gateway=gateway),)
    sources.sort(key=lambda item: item[0] != vip_address)
    for offset, (source, table) in enumerate(dict(sources).items()):
        rules.append(SourceRule(RULE_PRIORITY_FIRST + offset, source, table))
    return RoutingPlan(plumbing.namespace, main, tuple(tables), tuple(rules))


def apply_routing(host: HostOps, plan: RoutingPlan) -> None:
    """Make the namespace's tables and rules those of ``plan``. Idempotent."""
    for table, routes in plan.tables:
        host.sync_routes(plan.namespace, table, routes)
    host.sync_routes(plan.namespace, "main", plan.main)
    host.sync_source_rules(plan.namespace, plan.rules)
