"""Netns mode: an amphora's namespace, its legs on virtual networks, and their addresses.

Every network is a Linux bridge in the host namespace (``lbaas-br-<short>``); an amphora is a
namespace (``lbaas-amp-<short>``) with one veth leg per network it touches: the VIP network
(the VIP is on that leg) and each member network. The host may get an address on a bridge
(``vip_host_address``) so that it can reach the VIP itself. Names are derived from hashes of
the ids because Linux limits link names to 15 characters and ids are 36.

A network may instead be *mapped* (``agent.bridge_mappings``, as Neutron's Linux bridge agent
maps physical networks): its legs go on a bridge that already exists in the agent's
namespace, joined to the host's uplink for that network, which the agent neither creates,
addresses nor deletes, because the network's gateway is a router elsewhere (a lab host's
``vip0``). An amphora whose VIP network is mapped gets a default route via that gateway,
so clients beyond the router get their replies. Namespaces are named with a prefix
(``agent.namespace_prefix``) so that whoever owns a host (the lab) can find its amphorae.

``plan_plumbing`` is a pure function of the spec; ``apply_plumbing`` makes the host match a
plan and removes what the previous plan had and the new one has not; ``remove_plumbing``
tears an amphora's part down and deletes bridges no link uses any more. All of it goes
through ``HostOps``, whose calls are idempotent, so applying a plan twice changes nothing.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from lbaas.host.base import HostCommandFailed, HostOps, HostOpsError
from lbaas.wire.amphora import AmphoraSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Leg:
    """One veth pair from an amphora's namespace to a network's bridge."""

    network_id: str
    bridge: str
    host_end: str
    amphora_end: str
    addresses: tuple[str, ...]  # CIDR form, on the amphora end
    host_address: str | None  # CIDR form, on the bridge
    mapped: bool = False  # an existing bridge (bridge_mappings): never created or deleted
    gateway: str | None = None  # the subnet's gateway: the leg's own default route
    mtu: int | None = None  # the network's MTU, set on both ends of the veth


@dataclass(frozen=True)
class AmphoraPlumbing:
    namespace: str
    legs: tuple[Leg, ...]
    default_gateway: str | None = None  # set when the VIP network is mapped


DEFAULT_NAMESPACE_PREFIX = "lbaas-"


def _short(ident: str, length: int) -> str:
    return hashlib.sha256(ident.encode()).hexdigest()[:length]


def namespace_name(amphora_id: str, prefix: str = DEFAULT_NAMESPACE_PREFIX) -> str:
    return f"{prefix}amp-{_short(amphora_id, 12)}"


def bridge_name(network_id: str) -> str:
    return f"lbaas-br-{_short(network_id, 6)}"


def _with_prefix(address: str, cidr: str) -> str:
    return f"{address}/{ipaddress.ip_network(cidr, strict=False).prefixlen}"


def plan_plumbing(
    amphora_id: str,
    spec: AmphoraSpec,
    *,
    namespace_prefix: str = DEFAULT_NAMESPACE_PREFIX,
    bridge_mappings: Mapping[str, str] | None = None,
) -> AmphoraPlumbing:
    """The namespace and legs ``spec`` asks for (``bridge_mappings``: network id -> bridge)."""
    mappings = bridge_mappings or {}
    addresses: dict[str, list[str]] = {}
    host_addresses: dict[str, str | None] = {}
    gateways: dict[str, str | None] = {spec.vip.network_id: spec.vip.gateway}
    mtus: dict[str, int | None] = {spec.vip.network_id: spec.vip.mtu}
    vip = spec.vip
    # ACTIVE_STANDBY: the leg has the amphora's own VRRP address; keepalived adds the VIP
    # on whichever amphora of the pair is MASTER, so it must never be plumbed statically.
    own = vip.address if spec.vrrp is None else spec.vrrp.own_address
    addresses[vip.network_id] = [_with_prefix(own, vip.subnet_cidr)]
    host = spec.network.vip_host_address
    host_addresses[vip.network_id] = None if host is None else _with_prefix(host, vip.subnet_cidr)
    for net in spec.network.member_networks:
        addresses.setdefault(net.network_id, []).append(_with_prefix(net.address, net.subnet_cidr))
        if net.host_address is not None:
            host_addresses[net.network_id] = _with_prefix(net.host_address, net.subnet_cidr)
        else:
            host_addresses.setdefault(net.network_id, None)
        if gateways.get(net.network_id) is None:
            gateways[net.network_id] = net.gateway
        if mtus.get(net.network_id) is None:
            mtus[net.network_id] = net.mtu
    amp = _short(amphora_id, 6)
    legs = tuple(
        Leg(
            network_id=net_id,
            bridge=mappings.get(net_id) or bridge_name(net_id),
            host_end=f"lbv{amp}{_short(net_id, 4)}h",
            amphora_end=f"lbv{amp}{_short(net_id, 4)}a",
            addresses=tuple(dict.fromkeys(addrs)),
            # On a mapped network the gateway address belongs to the router, not this host.
            host_address=None if net_id in mappings else host_addresses[net_id],
            mapped=net_id in mappings,
            gateway=gateways.get(net_id),
            mtu=mtus.get(net_id),
        )
        for net_id, addrs in sorted(addresses.items())
    )
    return AmphoraPlumbing(
        namespace=namespace_name(amphora_id, namespace_prefix),
        legs=legs,
        default_gateway=host if vip.network_id in mappings else None,
    )


def vip_leg(plan: AmphoraPlumbing, spec: AmphoraSpec) -> Leg:
    """The leg of ``plan`` on the VIP network (the link VRRP runs on)."""
    return next(leg for leg in plan.legs if leg.network_id == spec.vip.network_id)


@dataclass(frozen=True)
class Announcement:
    """An address new on an amphora's link, to be announced once the amphora serves it."""

    namespace: str
    link: str
    address: str  # CIDR form


def apply_plumbing(
    host: HostOps, desired: AmphoraPlumbing, previous: AmphoraPlumbing | None
) -> list[Announcement]:
    """Create what ``desired`` needs; remove legs and addresses only ``previous`` had.
    Returns the addresses new on their links, for ``announce`` once HAProxy listens."""
    announcements: list[Announcement] = []
    host.create_namespace(desired.namespace)
    old_legs = {} if previous is None else {leg.network_id: leg for leg in previous.legs}
    for leg in desired.legs:
        _ensure_bridge(host, leg)
        if leg.host_address is not None:
            host.add_address(leg.bridge, leg.host_address)
        if not host.link_exists(leg.amphora_end, desired.namespace):
            host.create_veth_pair(leg.host_end, leg.amphora_end)
            host.move_to_namespace(leg.amphora_end, desired.namespace)
        host.attach_to_bridge(leg.host_end, leg.bridge)
        if leg.mtu is not None:
            host.set_link_mtu(leg.host_end, leg.mtu)
            host.set_link_mtu(leg.amphora_end, leg.mtu, desired.namespace)
        host.set_link_up(leg.host_end)
        host.set_link_up(leg.amphora_end, desired.namespace)
        old = old_legs.pop(leg.network_id, None)
        for address in () if old is None else set(old.addresses) - set(leg.addresses):
            host.delete_address(leg.amphora_end, address, desired.namespace)
        for address in leg.addresses:
            host.add_address(leg.amphora_end, address, desired.namespace)
        for address in leg.addresses if old is None else set(leg.addresses) - set(old.addresses):
            announcements.append(Announcement(desired.namespace, leg.amphora_end, address))
    for gone in old_legs.values():
        host.delete_link(gone.amphora_end, desired.namespace)
        _remove_unused_bridge(host, gone)
    if desired.default_gateway is not None:
        _default_route(host, desired.namespace, desired.default_gateway)
    return announcements


def announce(host: HostOps, announcements: list[Announcement]) -> None:
    """Gratuitous ARP for addresses new on their links: a rebuilt amphora has the old
    one's VIP behind a new MAC, which neighbours learn at once instead of after their
    entry goes stale. Sent once the amphora serves: a failover builds the new amphora
    while the old one still serves the VIP, and neighbours moved earlier would find no
    HAProxy listening. A failure costs only that speed-up, so it is logged, not raised."""
    for a in announcements:
        try:
            host.announce_address(a.link, a.address, a.namespace)
        except (OSError, HostOpsError) as exc:
            log.warning(
                "could not announce %s on %s in %s: %s", a.address, a.link, a.namespace, exc
            )


def _ensure_bridge(host: HostOps, leg: Leg) -> None:
    if not leg.mapped:
        host.create_bridge(leg.bridge)
    elif not host.link_exists(leg.bridge):
        raise HostOpsError(
            f"bridge {leg.bridge}, mapped to network {leg.network_id} by agent.bridge_mappings, "
            "does not exist in the agent's network namespace"
        )


def _default_route(host: HostOps, namespace: str, gateway: str) -> None:
    argv = ["ip", "route", "replace", "default", "via", gateway]
    done = host.run_in_namespace(namespace, argv)
    if done.returncode != 0:
        raise HostCommandFailed(argv, done.returncode, done.stderr)


def remove_plumbing(host: HostOps, plumbing: AmphoraPlumbing) -> None:
    """Delete the namespace (its legs go with it) and bridges left without links."""
    host.delete_namespace(plumbing.namespace)
    for leg in plumbing.legs:
        host.delete_link(leg.host_end)  # in case the namespace was already gone
        _remove_unused_bridge(host, leg)


def _remove_unused_bridge(host: HostOps, leg: Leg) -> None:
    if not leg.mapped and not host.bridge_ports(leg.bridge):
        host.delete_link(leg.bridge)
