"""``RoutingOps`` with iproute2 and ``sysctl``, for ``RealHostOps``.

Reads go through ``ip -j`` so that "is it there already" is decided on parsed data rather
than on error texts; routes are written with ``ip route replace`` (idempotent by itself),
rules have no replace, so they are listed first and only the difference is changed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lbaas.host.routing import (
    RULE_PRIORITY_FIRST,
    RULE_PRIORITY_LAST,
    Route,
    RoutingOps,
    SourceRule,
)


class IpRouting(RoutingOps):
    """The routing calls, for a class that runs ``ip`` (``_ip``) and commands in a netns."""

    def _ip(self, args: Sequence[str], namespace: str | None = None) -> str:
        raise NotImplementedError

    def _try_ip(self, args: Sequence[str], namespace: str | None = None) -> str | None:
        raise NotImplementedError

    def set_link_mtu(self, name: str, mtu: int, namespace: str | None = None) -> None:
        self._ip(["link", "set", "dev", name, "mtu", str(mtu)], namespace)

    def sync_routes(self, namespace: str, table: int | str, routes: Sequence[Route]) -> None:
        wanted = {_route_key(route.destination, route.device, route.gateway) for route in routes}
        # A table nothing was put in yet does not exist: ``ip`` then fails, meaning "empty".
        listing = self._try_ip(["-j", "route", "show", "table", str(table)], namespace)
        for found in _parse(listing or ""):
            if found.get("protocol") == "kernel":
                continue
            key = _route_key(str(found["dst"]), found.get("dev"), found.get("gateway"))
            if key not in wanted:
                self._ip(["route", "del", str(found["dst"]), "table", str(table)], namespace)
        for route in routes:
            argv = ["route", "replace", route.destination, "dev", route.device]
            argv += ["via", route.gateway] if route.gateway else []
            argv += ["src", route.source] if route.source else []
            self._ip([*argv, "table", str(table)], namespace)

    def sync_source_rules(self, namespace: str, rules: Sequence[SourceRule]) -> None:
        wanted = {(r.priority, r.source, r.table) for r in rules}
        present = set()
        for found in self._json(["-j", "rule", "show"], namespace):
            priority = int(found.get("priority") or -1)
            if not RULE_PRIORITY_FIRST <= priority <= RULE_PRIORITY_LAST:
                continue
            found_table = str(found.get("table"))
            number = int(found_table) if found_table.isdigit() else -1
            key = (priority, str(found.get("src")), number)
            if key in wanted:
                present.add(key)
            else:
                self._ip(["rule", "del", "priority", str(priority)], namespace)
        for priority, source, table in sorted(wanted - present):
            argv = ["rule", "add", "priority", str(priority), "from", source]
            self._ip([*argv, "lookup", str(table)], namespace)

    def set_forwarding(self, namespace: str, enabled: bool) -> None:
        # ``ip netns exec`` remounts /proc/sys for the namespace, so sysctl sees its own.
        value = "1" if enabled else "0"
        self._run_sysctl(namespace, f"net.ipv4.ip_forward={value}")

    def _run_sysctl(self, namespace: str, setting: str) -> None:
        raise NotImplementedError

    def _json(self, args: Sequence[str], namespace: str) -> list[dict[str, Any]]:
        return _parse(self._ip(args, namespace))


def _parse(out: str) -> list[dict[str, Any]]:
    parsed: list[dict[str, Any]] = json.loads(out) if out.strip() else []
    return parsed


def _route_key(destination: str, device: object, gateway: object) -> tuple[str, str, str]:
    """A route as compared: ``ip -j`` prints a /32 destination without its prefix."""
    return (destination.removesuffix("/32"), str(device), str(gateway or ""))
