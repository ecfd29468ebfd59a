"""Host operations for the embedded, no-root mode: HAProxy runs, the network is left alone.

In loopback mode every VIP is an address in 127.0.0.0/8, which Linux already routes to
``lo`` in full, so HAProxy can bind it without any address being added and without root.
There is nothing to plumb: creating namespaces, bridges or veths is refused with
``UnsupportedInMode`` (a caller that asks has mistaken the mode, and silently doing nothing
would hide that), while deleting them, or asking whether they exist, harmlessly finds
nothing. HAProxy runs as the agent's own user.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from lbaas.host.base import CommandResult, UnsupportedInMode
from lbaas.host.haproxy_exec import HaproxyLauncher, LaunchingHostOps
from lbaas.host.routing import Route, SourceRule


def is_loopback_address(address: str) -> bool:
    """Whether ``address`` (plain or CIDR form) is one the host already routes to lo."""
    try:
        return ipaddress.ip_interface(address).ip.is_loopback
    except ValueError:
        return False


class LoopbackHostOps(LaunchingHostOps):
    """HAProxy processes on the host's own network; no namespaces, no links."""

    def __init__(self, launcher: HaproxyLauncher | None = None) -> None:
        super().__init__(launcher or HaproxyLauncher())

    def namespace_prefix(self, namespace: str | None) -> list[str]:
        if namespace is not None:
            raise _refuse(f"run HAProxy in namespace {namespace}")
        return []

    def create_namespace(self, name: str) -> None:
        raise _refuse(f"create namespace {name}")

    def delete_namespace(self, name: str) -> None:
        return None

    def namespace_exists(self, name: str) -> bool:
        return False

    def run_in_namespace(
        self, namespace: str, argv: Sequence[str], *, timeout: float = 30.0
    ) -> CommandResult:
        raise _refuse(f"run a command in namespace {namespace}")

    def create_bridge(self, name: str) -> None:
        raise _refuse(f"create bridge {name}")

    def create_veth_pair(self, name: str, peer: str) -> None:
        raise _refuse(f"create veth pair {name}")

    def delete_link(self, name: str, namespace: str | None = None) -> None:
        return None

    def link_exists(self, name: str, namespace: str | None = None) -> bool:
        return False

    def bridge_ports(self, bridge: str) -> list[str]:
        return []

    def attach_to_bridge(self, name: str, bridge: str) -> None:
        raise _refuse(f"attach {name} to bridge {bridge}")

    def move_to_namespace(self, name: str, namespace: str) -> None:
        raise _refuse(f"move {name} into namespace {namespace}")

    def set_link_up(self, name: str, namespace: str | None = None) -> None:
        raise _refuse(f"set link {name} up")

    def add_address(self, link: str, address: str, namespace: str | None = None) -> None:
        if namespace is None and is_loopback_address(address):
            return  # 127.0.0.0/8 and ::1 are routed to lo already.
        raise _refuse(f"add address {address} to {link}")

    def delete_address(self, link: str, address: str, namespace: str | None = None) -> None:
        return None

    def set_link_mtu(self, name: str, mtu: int, namespace: str | None = None) -> None:
        raise _refuse(f"set the MTU of {name}")

    def sync_routes(self, namespace: str, table: int | str, routes: Sequence[Route]) -> None:
        raise _refuse(f"route in namespace {namespace}")

    def sync_source_rules(self, namespace: str, rules: Sequence[SourceRule]) -> None:
        raise _refuse(f"add routing rules in namespace {namespace}")

    def set_forwarding(self, namespace: str, enabled: bool) -> None:
        raise _refuse(f"forward in namespace {namespace}")


def _refuse(what: str) -> UnsupportedInMode:
    return UnsupportedInMode(f"loopback mode cannot {what}; run the agent in netns mode")
