"""The metadata proxies on a netns-mode host: a namespace, a port and an HAProxy each.

Network ``N``'s proxy lives in namespace ``<prefix>meta-<N>``. Its port is a veth whose
inner end (``eth0``) holds the metadata address with the same MAC on every host and whose
outer end joins the network's bridge on this host: the bridge ``agent.bridge_mappings``
names, else Neutron's Linux-bridge name ``brq<first 11 characters of N>`` (created when
missing, as Neutron's agent does). The inner end has an on-link default route, so replies
go back to whichever of the network's addresses asked. That the port stays local to the
host (OVN's ``localport``: never carried to another host) is the host network's job; the
lab's tenant networks drop the metadata address and MAC at their VXLAN ports.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path

from lbaas.host.base import HaproxyFiles, HostCommandFailed, HostOps
from lbaas.host.commands import run_command
from lbaas.metadata.haproxy_config import METADATA_ADDRESS, METADATA_MAC, proxy_config
from lbaas.private_files import make_private_directory, write_private

log = logging.getLogger(__name__)

#: Network ids the agent makes namespaces and configurations from (registry ids: UUIDs).
NETWORK_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_INNER = "eth0"


def namespace_name(prefix: str, network_id: str) -> str:
    return f"{prefix}meta-{network_id}"


def linux_bridge(network_id: str) -> str:
    """Neutron's Linux-bridge agent's bridge name for a network."""
    return f"brq{network_id[:11]}"


def _port_names(network_id: str) -> tuple[str, str]:
    """The veth ends (15 characters at most): host side, and inner side before its rename."""
    tag = network_id.replace("-", "")[:12]
    return f"mp{tag}", f"mq{tag}"


class NetnsProxyHost:
    def __init__(
        self,
        host: HostOps,
        root: Path,
        agent_socket: Path,
        *,
        namespace_prefix: str,
        bridge_mappings: Mapping[str, str],
    ) -> None:
        self._host = host
        self._root = root
        self._socket = agent_socket
        self._prefix = namespace_prefix
        self._bridges = dict(bridge_mappings)

    def present(self) -> set[str]:
        done = run_command(["ip", "netns", "list"])
        start = namespace_name(self._prefix, "")
        names = (line.split()[0] for line in done.stdout.splitlines() if line.strip())
        return {name[len(start) :] for name in names if name.startswith(start)}

    def ensure(self, network_id: str) -> None:
        if not NETWORK_ID.match(network_id):
            raise ValueError(f"network id {network_id!r} cannot name a namespace")
        namespace = namespace_name(self._prefix, network_id)
        if not self._host.namespace_exists(namespace) or not self._port_ready(namespace):
            self._plumb(network_id, namespace)
        files = self._files(network_id)
        make_private_directory(files.workdir)
        text = proxy_config(network_id, self._socket)
        changed = not files.config.exists() or files.config.read_text() != text
        write_private(files.config, text)
        if changed and self._host.haproxy_master_pid(files) is not None:
            self._host.stop_haproxy(files)
        self._host.start_haproxy(files, namespace)

    def alive(self, network_id: str) -> bool:
        return self._host.haproxy_master_pid(self._files(network_id)) is not None

    def remove(self, network_id: str) -> None:
        files = self._files(network_id)
        if files.workdir.exists():
            self._host.stop_haproxy(files)
        namespace = namespace_name(self._prefix, network_id)
        self._kill_leftovers(namespace)
        self._host.delete_namespace(namespace)
        self._host.delete_link(_port_names(network_id)[0])
        shutil.rmtree(files.workdir, ignore_errors=True)

    def _files(self, network_id: str) -> HaproxyFiles:
        # Short: HAProxy's master socket path must fit in 97 bytes.
        return HaproxyFiles.in_directory(self._root / network_id.replace("-", "")[:16])

    def _port_ready(self, namespace: str) -> bool:
        done = self._host.run_in_namespace(namespace, ["ip", "-o", "addr", "show", _INNER])
        return done.returncode == 0 and f"{METADATA_ADDRESS}/32" in done.stdout

    def _plumb(self, network_id: str, namespace: str) -> None:
        outer, inner = _port_names(network_id)
        self._host.create_namespace(namespace)
        self._host.delete_link(outer)  # a half-made port from an interrupted attempt
        self._host.create_veth_pair(outer, inner)
        self._host.move_to_namespace(inner, namespace)
        self._ip(namespace, "link", "set", inner, "name", _INNER, "address", METADATA_MAC)
        self._ip(namespace, "addr", "replace", f"{METADATA_ADDRESS}/32", "dev", _INNER)
        self._ip(namespace, "link", "set", _INNER, "up")
        self._ip(namespace, "route", "replace", "default", "dev", _INNER)
        bridge = self._bridges.get(network_id) or linux_bridge(network_id)
        if not self._host.link_exists(bridge):
            self._host.create_bridge(bridge)
        self._host.attach_to_bridge(outer, bridge)
        self._host.set_link_up(outer)

    def _ip(self, namespace: str, *argv: str) -> None:
        done = self._host.run_in_namespace(namespace, ["ip", *argv])
        if done.returncode != 0:
            raise HostCommandFailed(["ip", *argv], done.returncode, done.stderr)

    def _kill_leftovers(self, namespace: str) -> None:
        """An HAProxy whose files are gone (an earlier agent's) still holds the namespace."""
        if not self._host.namespace_exists(namespace):
            return
        done = run_command(["ip", "netns", "pids", namespace])
        for word in done.stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(word), signal.SIGKILL)
