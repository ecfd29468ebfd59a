"""Private subnets for tests that build networks, chosen so they shadow nothing on the host."""

from __future__ import annotations

import ipaddress
import json
import random
import subprocess


def _networks_in_use() -> list[ipaddress.IPv4Network]:
    """IPv4 networks of the host's routes and addresses (all tables), not to be shadowed."""
    used: list[ipaddress.IPv4Network] = []
    routes = subprocess.run(
        ["ip", "-j", "-4", "route", "show", "table", "all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for route in json.loads(routes or "[]"):
        dst = route.get("dst", "default")
        if dst != "default":
            used.append(ipaddress.IPv4Network(dst, strict=False))
    addresses = subprocess.run(
        ["ip", "-j", "-4", "addr"], capture_output=True, text=True, check=True
    ).stdout
    for link in json.loads(addresses or "[]"):
        for info in link.get("addr_info", []):
            used.append(ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False))
    return used


def pick_subnets(count: int) -> list[ipaddress.IPv4Network]:
    """``count`` random 10.x.y.0/24 networks that overlap nothing the host routes."""
    used = _networks_in_use()
    picked: list[ipaddress.IPv4Network] = []
    while len(picked) < count:
        candidate = ipaddress.IPv4Network(
            f"10.{random.randint(64, 250)}.{random.randint(0, 255)}.0/24"
        )
        if not any(candidate.overlaps(other) for other in [*used, *picked]):
            picked.append(candidate)
    return picked
