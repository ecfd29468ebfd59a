"""Host operations for netns mode, done with iproute2 as root.

Each method asks ``ip`` (with ``-j`` where it reads) whether the thing exists before creating
or deleting it, which is what makes the calls idempotent: ``ip`` itself fails on "File
exists" and "Cannot find device", and matching its error texts would be brittle. Addresses
use ``ip addr replace``, which is idempotent by itself. HAProxy runs inside the amphora's
namespace through ``ip netns exec``; its unix sockets stay reachable from the host because
network namespaces do not separate the file system.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from lbaas.host.base import CommandResult, HostCommandFailed, HostOpsError
from lbaas.host.commands import run_command
from lbaas.host.garp import send_gratuitous_arp, send_unsolicited_na
from lbaas.host.haproxy_exec import HaproxyLauncher, LaunchingHostOps
from lbaas.host.routing_real import IpRouting

#: Where iproute2 keeps the names of network namespaces (bind mounts of them).
NETNS_RUN_DIR = "/run/netns"


class RealHostOps(IpRouting, LaunchingHostOps):
    """Namespaces, bridges, veths and addresses for real; needs root."""

    def __init__(self, launcher: HaproxyLauncher | None = None, ip_binary: str = "ip") -> None:
        super().__init__(launcher or HaproxyLauncher())
        self._ip_binary = ip_binary

    def namespace_prefix(self, namespace: str | None) -> list[str]:
        return [] if namespace is None else [self._ip_binary, "netns", "exec", namespace]

    # --- namespaces ---------------------------------------------------------------------

    def create_namespace(self, name: str) -> None:
        if not self.namespace_exists(name):
            self._ip(["netns", "add", name])
        self._ip(["link", "set", "lo", "up"], name)

    def delete_namespace(self, name: str) -> None:
        if self.namespace_exists(name):
            self._ip(["netns", "delete", name])

    def namespace_exists(self, name: str) -> bool:
        # What ``ip netns list`` reads, without a process: the supervisor asks for every
        # amphora every second (an ``ip`` run each was ~2 ms of CPU per amphora per round).
        return "/" not in name and os.path.lexists(f"{NETNS_RUN_DIR}/{name}")

    def rename_namespace(self, name: str, new_name: str, inside: int) -> None:
        # A name is only a bind mount of the namespace under /run/netns: mount it under
        # the new name through a process inside (``attach``), then drop the old mount.
        # Checked first: a pid reused by a process of the host's namespace would give the
        # host's namespace the amphora's name, and its plumbing would land there.
        try:
            named = os.stat(f"{NETNS_RUN_DIR}/{name}")
            held = os.stat(f"/proc/{inside}/ns/net")
        except OSError as exc:
            raise HostOpsError(f"cannot rename namespace {name}: {exc}") from exc
        if (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
            raise HostOpsError(f"process {inside} is not in namespace {name}")
        self._ip(["netns", "attach", new_name, str(inside)])
        self._ip(["netns", "delete", name])

    def run_in_namespace(
        self, namespace: str, argv: Sequence[str], *, timeout: float = 30.0
    ) -> CommandResult:
        return run_command([*self.namespace_prefix(namespace), *argv], timeout=timeout)

    # --- links --------------------------------------------------------------------------

    def create_bridge(self, name: str) -> None:
        if not self.link_exists(name):
            self._ip(["link", "add", name, "type", "bridge"])
        self._ip(["link", "set", name, "up"])

    def create_veth_pair(self, name: str, peer: str) -> None:
        if not self.link_exists(name):
            self._ip(["link", "add", name, "type", "veth", "peer", "name", peer])

    def delete_link(self, name: str, namespace: str | None = None) -> None:
        if not self.link_exists(name, namespace):
            return
        try:
            self._ip(["link", "del", name], namespace)
        except HostCommandFailed:
            # The kernel tears a deleted namespace's veths down asynchronously, so the host
            # end can vanish between the check and the delete: gone is what was asked for.
            if self.link_exists(name, namespace):
                raise

    def link_exists(self, name: str, namespace: str | None = None) -> bool:
        # Not /sys/class/net: sysfs shows the links of the namespace that mounted it,
        # which for a lab host entered with ``nsenter --net`` is the machine's.
        if namespace is not None and not self.namespace_exists(namespace):
            return False
        return self._try_ip(["-j", "link", "show", "dev", name], namespace) is not None

    def bridge_ports(self, bridge: str) -> list[str]:
        if not self.link_exists(bridge):
            return []
        out = self._ip(["-j", "link", "show", "master", bridge]).strip()
        return [str(link["ifname"]) for link in (json.loads(out) if out else [])]

    def attach_to_bridge(self, name: str, bridge: str) -> None:
        self._ip(["link", "set", name, "master", bridge])

    def move_to_namespace(self, name: str, namespace: str) -> None:
        if not self.link_exists(name, namespace):
            self._ip(["link", "set", name, "netns", namespace])

    def set_link_up(self, name: str, namespace: str | None = None) -> None:
        self._ip(["link", "set", name, "up"], namespace)

    def add_address(self, link: str, address: str, namespace: str | None = None) -> None:
        # IPv6 without duplicate address detection: a failover's new amphora takes the
        # VIP while the old one still holds it (make before break), which DAD would mark
        # failed for good; and DAD would hold any new VIP tentative for a second.
        nodad = ["nodad"] if ":" in address else []
        self._ip(["addr", "replace", address, "dev", link, *nodad], namespace)

    def announce_address(self, link: str, address: str, namespace: str | None = None) -> None:
        bare = address.split("/", 1)[0]
        if ":" in bare:
            send_unsolicited_na(link, bare, namespace)
        else:
            send_gratuitous_arp(link, bare, namespace)

    def delete_address(self, link: str, address: str, namespace: str | None = None) -> None:
        if not self.link_exists(link, namespace):
            return
        out = self._ip(["-j", "addr", "show", "dev", link], namespace).strip()
        present = {
            f"{info['local']}/{info['prefixlen']}"
            for entry in (json.loads(out) if out else [])
            for info in entry.get("addr_info", [])
        }
        if address in present:
            self._ip(["addr", "del", address, "dev", link], namespace)

    def _run_sysctl(self, namespace: str, setting: str) -> None:
        argv = [*self.namespace_prefix(namespace), "sysctl", "-q", "-w", setting]
        done = run_command(argv)
        if done.returncode != 0:
            raise HostCommandFailed(argv, done.returncode, done.stderr)

    # --- running ip ---------------------------------------------------------------------

    def _argv(self, args: Sequence[str], namespace: str | None) -> list[str]:
        return [self._ip_binary, *(["-n", namespace] if namespace else []), *args]

    def _ip(self, args: Sequence[str], namespace: str | None = None) -> str:
        argv = self._argv(args, namespace)
        done = run_command(argv)
        if done.returncode != 0:
            raise HostCommandFailed(argv, done.returncode, done.stderr)
        return done.stdout

    def _try_ip(self, args: Sequence[str], namespace: str | None = None) -> str | None:
        try:
            return self._ip(args, namespace)
        except HostCommandFailed:
            return None
