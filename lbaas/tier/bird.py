"""BIRD 2 configurations of the L4 tier: the router that spreads VIPs over nodes, and a node.

Each node announces its VIPs as /32 routes over eBGP (one private AS for all nodes, another
for the router); the router accepts only /32s inside its VIP networks and hands the kernel
one multipath route per VIP (``merge paths``): equal BGP routes from several nodes become
ECMP next hops, spread by the kernel's L4 hash (``fib_multipath_hash_policy=1``, set by whoever
builds the router's namespace). A node installs nothing in its own kernel: its VIP routes
live in BIRD's table only (the L4 engine's DNAT catches the VIP's packets before routing).

BFD on the BGP sessions notices a dead link or node in ``interval x multiplier``, long before
the BGP hold timer; without it the hold timer is the detection time.

Pure: text out, nothing run. ``bird -p -c FILE`` parses a result (the golden tests do).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_INTERFACE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
ROUTER_ASN = 64512
NODE_ASN = 64513


@dataclass(frozen=True)
class BgpTimers:
    """Seconds. BIRD's hold time is at least 3; keepalive a third of it."""

    hold: int = 3
    keepalive: int = 1
    connect_retry: int = 1


@dataclass(frozen=True)
class Bfd:
    """BFD on ``interface`` (the fabric): a session down after ``multiplier`` missed packets."""

    interface: str
    interval_ms: int = 100
    multiplier: int = 3


@dataclass(frozen=True)
class Peer:
    name: str  # the BGP protocol's name in BIRD (letters, digits, underscores)
    address: str
    asn: int


@dataclass(frozen=True)
class RouterConfig:
    router_id: str
    nodes: tuple[Peer, ...]
    vip_networks: tuple[str, ...]  # only /32s inside these are accepted from nodes
    asn: int = ROUTER_ASN
    bfd: Bfd | None = None
    timers: BgpTimers = BgpTimers()
    max_paths: int = 16


@dataclass(frozen=True)
class NodeConfig:
    router_id: str  # the node's fabric address
    router: Peer
    vips: tuple[str, ...]
    asn: int = NODE_ASN
    bfd: Bfd | None = None
    timers: BgpTimers = BgpTimers()
    # A file of ``route X/32 blackhole;`` lines the node's lbaas agent keeps (its VIPs from
    # the distributed provider: ``lbaas.tier.host.bird_announcer``), read into ``vips`` too.
    include: str | None = None


def _address(value: str) -> str:
    return str(ipaddress.IPv4Address(value))  # ValueError for anything else


def _asn(value: int) -> int:
    if not 1 <= value <= 4_294_967_295:
        raise ValueError(f"AS number out of range: {value}")
    return value


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"not a BIRD protocol name: {value!r}")
    return value


def _header(role: str, router_id: str) -> list[str]:
    return [
        f"# BIRD 2 configuration of an L4 tier {role}, rendered by lbaas (lbaas/tier/bird.py).",
        f"router id {_address(router_id)};",
        "log stderr { info, remote, warning, error, auth, fatal, bug };",
        "",
        "protocol device {",
        "  scan time 10;",
        "}",
        "",
    ]


def _bfd(bfd: Bfd | None) -> list[str]:
    if bfd is None:
        return []
    if not _INTERFACE.match(bfd.interface) or bfd.interval_ms < 1 or bfd.multiplier < 1:
        raise ValueError(f"bad BFD settings: {bfd}")
    return [
        "protocol bfd {",
        f'  interface "{bfd.interface}" {{',
        f"    min rx interval {bfd.interval_ms} ms;",
        f"    min tx interval {bfd.interval_ms} ms;",
        f"    multiplier {bfd.multiplier};",
        "  };",
        "}",
        "",
    ]


def _session(timers: BgpTimers, bfd: Bfd | None) -> list[str]:
    if not 3 <= timers.hold or not 1 <= timers.keepalive <= timers.hold // 3:
        raise ValueError(f"bad BGP timers: {timers}")
    return [
        f"  hold time {timers.hold};",
        f"  keepalive time {timers.keepalive};",
        f"  connect retry time {max(1, timers.connect_retry)};",
        # Retry soon after an error, so a node that comes back is peered again in seconds.
        "  error wait time 1, 5;",
        *(["  bfd on;"] if bfd is not None else []),
    ]


def _prefix_set(networks: Iterable[str]) -> str:
    parsed = [ipaddress.IPv4Network(net) for net in networks]
    if not parsed:
        raise ValueError("a router needs at least one VIP network")
    return ", ".join(f"{net}{{32,32}}" for net in parsed)


def render_router(config: RouterConfig) -> str:
    """The router: eBGP to every node, VIP /32s in, ECMP multipath routes to the kernel."""
    if not 1 <= config.max_paths <= 256:
        raise ValueError(f"max_paths out of range: {config.max_paths}")
    lines = [
        *_header("router", config.router_id),
        "# Equal routes from several nodes become one kernel route with a next hop per node.",
        "protocol kernel {",
        "  ipv4 {",
        "    import none;",
        "    export where source = RTS_BGP;",
        "  };",
        f"  merge paths on limit {config.max_paths};",
        "}",
        "",
        *_bfd(config.bfd),
        "template bgp tier_node {",
        f"  local as {_asn(config.asn)};",
        *_session(config.timers, config.bfd),
        "  ipv4 {",
        # A node may announce host routes of the VIP networks and nothing else.
        f"    import where net ~ [ {_prefix_set(config.vip_networks)} ];",
        "    export none;",
        "  };",
        "}",
        "",
    ]
    for node in sorted(config.nodes, key=lambda peer: peer.name):
        lines += [
            f"protocol bgp {_name(node.name)} from tier_node {{",
            f"  neighbor {_address(node.address)} as {_asn(node.asn)};",
            "}",
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_node(config: NodeConfig) -> str:
    """A node: its VIPs as static /32 routes, exported to the router and to nothing else."""
    routes = [f"  route {_address(vip)}/32 blackhole;" for vip in sorted(set(config.vips))]
    if config.include is not None:
        if not config.include.startswith("/") or '"' in config.include or "\n" in config.include:
            raise ValueError(f"not an absolute file name: {config.include!r}")
        routes.append(f'  include "{config.include}";')
    return (
        "\n".join(
            [
                *_header("node", config.router_id),
                "# The VIPs this node balances; withdrawn by rendering them away and reconfiguring.",
                "protocol static vips {",
                "  ipv4;",
                *routes,
                "}",
                "",
                *_bfd(config.bfd),
                f"protocol bgp {_name(config.router.name)} {{",
                f"  local as {_asn(config.asn)};",
                f"  neighbor {_address(config.router.address)} as {_asn(config.router.asn)};",
                *_session(config.timers, config.bfd),
                "  ipv4 {",
                "    import none;",
                '    export where proto = "vips";',
                "  };",
                "}",
            ]
        )
        + "\n"
    )
