"""The lab's address plan: one /24 per network (the VIP network larger when asked), chosen to shadow nothing on the machine.

The lab's addresses live only in its own namespaces, but a later step may join a namespace
to the host (a control plane in the root namespace, say), so ranges the host routes or holds
are avoided as the test suite's scratch subnets avoid them.
"""

from __future__ import annotations

import ipaddress
import json
import random
from collections.abc import Iterable, Sequence

from lbaas.lab.base import LabError, Runner

ROUTER_HOST = 1
CONTROL_HOST = 2  # control host k (ctl, ctl2…) is CONTROL_HOST + k - 1 on the fabric
CLIENT_HOST = 2
DATABASE_HOST = 9  # the database host of a lab with several control hosts
FIRST_HOST = 10


def networks_in_use(run: Runner) -> list[ipaddress.IPv4Network]:
    """IPv4 networks of the machine's routes (all tables) and addresses."""
    used: list[ipaddress.IPv4Network] = []
    routes = run(["ip", "-j", "-4", "route", "show", "table", "all"])
    addresses = run(["ip", "-j", "-4", "addr"])
    if routes.returncode != 0 or addresses.returncode != 0:
        raise LabError(f"cannot read the host's routes: {routes.stderr}{addresses.stderr}")
    for route in json.loads(routes.stdout or "[]"):
        dst = route.get("dst", "default")
        if dst != "default":
            used.append(ipaddress.IPv4Network(dst, strict=False))
    for link in json.loads(addresses.stdout or "[]"):
        for info in link.get("addr_info", []):
            used.append(ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False))
    return used


def pick_networks(
    count: int,
    used: Iterable[ipaddress.IPv4Network],
    rng: random.Random,
    prefixes: Sequence[int] = (),
) -> list[ipaddress.IPv4Network]:
    """``count`` random 10.x.y.0 networks overlapping nothing in ``used`` nor each other:
    /24s, or the ``i``-th of length ``prefixes[i]`` where given (16-24: a VIP network
    for thousands of load balancers)."""
    taken = list(used)
    picked: list[ipaddress.IPv4Network] = []
    for _attempt in range(10_000):
        if len(picked) == count:
            return picked
        length = prefixes[len(picked)] if len(picked) < len(prefixes) else 24
        start = f"10.{rng.randint(64, 250)}.{rng.randint(0, 255)}.0/{length}"
        candidate = ipaddress.IPv4Network(start, strict=False)
        if not any(candidate.overlaps(other) for other in [*taken, *picked]):
            picked.append(candidate)
    raise LabError("no free 10.x.y.0 networks left for the lab")


def address(network: str, host: int) -> str:
    """The ``host``-th address of ``network`` with its prefix length (10.70.3.11/24)."""
    net = ipaddress.IPv4Network(network)
    return f"{net.network_address + host}/{net.prefixlen}"


def control_host(index: int) -> int:
    """Control host ``index``'s host number on the fabric (ctl: 2, ctl2: 3, …)."""
    return CONTROL_HOST + index - 1


def bare(address_with_prefix: str) -> str:
    return address_with_prefix.split("/", 1)[0]


def network_names(members: int) -> Sequence[str]:
    """The lab's networks in the order their /24s are picked."""
    return ("fab", "vip", *(f"m{index}" for index in range(members)), "out")


def local_mac(rng: random.Random) -> str:
    """A random unicast, locally administered MAC (02:…)."""
    return ":".join(f"{octet:02x}" for octet in (0x02, *rng.randbytes(5)))
