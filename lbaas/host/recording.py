"""A ``HostOps`` that runs nothing and remembers everything, for unit tests.

It keeps a small model of the host (namespaces, links with their namespace and bridge,
addresses, HAProxy masters with made-up pids) so that idempotency behaves as on a real host,
and it records every call in ``calls`` as ``(method name, arguments)``. Tests assert on the
calls (``count("reload_haproxy")``) and steer it: a ``validator`` (constructor) that may
raise ``InvalidRenderedConfig`` for a given configuration text, ``reload_error`` to make
reloads fail, ``run_as`` to play a root agent, ``fd_limit`` to play a host with few file descriptors, and ``kill_haproxy`` to play a master that died. ``loaded`` holds the ``setenv`` values each
master read at its last start or reload, so a file changed without a reload shows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lbaas.host.base import (
    CommandResult,
    HaproxyFiles,
    HaproxyReloadFailed,
    HostOps,
    HostOpsError,
    UnsupportedInMode,
)
from lbaas.host.routing import Route, SourceRule


@dataclass
class _Link:
    namespace: str | None
    peer: str | None = None
    bridge: str | None = None
    up: bool = False
    addresses: set[str] = field(default_factory=set)


class RecordingHostOps(HostOps):
    """Records calls against an in-memory host."""

    def __init__(
        self,
        validator: Callable[[str], None] | None = None,
        *,
        allow_namespaces: bool = True,
    ) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self.namespaces: set[str] = set()
        self.links: dict[str, _Link] = {}
        self.masters: dict[Path, int] = {}
        self.master_namespaces: dict[Path, str | None] = {}
        self._validator = validator
        self._allow_namespaces = allow_namespaces
        self._pids = itertools.count(1000)
        self.reload_error: HostOpsError | None = None
        self.fd_limit: int | None = None
        self.run_as: tuple[str, str] | None = None
        self.loaded: dict[Path, dict[str, str]] = {}
        self.mtus: dict[str, int] = {}
        self.routes: dict[tuple[str, str], tuple[Route, ...]] = {}
        self.rules: dict[str, tuple[SourceRule, ...]] = {}
        self.forwarding: dict[str, bool] = {}

    def count(self, method: str) -> int:
        return sum(1 for name, _ in self.calls if name == method)

    def kill_haproxy(self, files: HaproxyFiles) -> None:
        """Make the master of ``files`` vanish, as if it had been killed."""
        self.masters.pop(files.config, None)

    def _record(self, method: str, *args: object) -> None:
        self.calls.append((method, args))

    def _check_mode(self, what: str) -> None:
        if not self._allow_namespaces:
            raise UnsupportedInMode(f"recording host configured without namespaces: {what}")

    def create_namespace(self, name: str) -> None:
        self._record("create_namespace", name)
        self._check_mode(name)
        self.namespaces.add(name)

    def delete_namespace(self, name: str) -> None:
        self._record("delete_namespace", name)
        self.namespaces.discard(name)
        for link_name in [n for n, link in self.links.items() if link.namespace == name]:
            self._drop(link_name)

    def namespace_exists(self, name: str) -> bool:
        return name in self.namespaces

    def rename_namespace(self, name: str, new_name: str, inside: int) -> None:
        self._record("rename_namespace", name, new_name, inside)
        if name not in self.namespaces or new_name in self.namespaces:
            raise HostOpsError(f"cannot rename namespace {name} to {new_name}")
        self.namespaces.discard(name)
        self.namespaces.add(new_name)
        for link in self.links.values():
            if link.namespace == name:
                link.namespace = new_name
        for config, namespace in list(self.master_namespaces.items()):
            if namespace == name:
                self.master_namespaces[config] = new_name

    def run_in_namespace(
        self, namespace: str, argv: Sequence[str], *, timeout: float = 30.0
    ) -> CommandResult:
        self._record("run_in_namespace", namespace, tuple(argv))
        self._check_mode(namespace)
        return CommandResult(0, "", "")

    def create_bridge(self, name: str) -> None:
        self._record("create_bridge", name)
        self._check_mode(name)
        self.links.setdefault(name, _Link(namespace=None)).up = True

    def create_veth_pair(self, name: str, peer: str) -> None:
        self._record("create_veth_pair", name, peer)
        self._check_mode(name)
        if name not in self.links:
            self.links[name] = _Link(namespace=None, peer=peer)
            self.links[peer] = _Link(namespace=None, peer=name)

    def delete_link(self, name: str, namespace: str | None = None) -> None:
        self._record("delete_link", name, namespace)
        link = self.links.get(name)
        if link is not None and link.namespace == namespace:
            self._drop(name)

    def _drop(self, name: str) -> None:
        link = self.links.pop(name, None)
        if link is not None and link.peer is not None:
            self.links.pop(link.peer, None)

    def link_exists(self, name: str, namespace: str | None = None) -> bool:
        link = self.links.get(name)
        return link is not None and link.namespace == namespace

    def bridge_ports(self, bridge: str) -> list[str]:
        return sorted(n for n, link in self.links.items() if link.bridge == bridge)

    def attach_to_bridge(self, name: str, bridge: str) -> None:
        self._record("attach_to_bridge", name, bridge)
        self.links[name].bridge = bridge

    def move_to_namespace(self, name: str, namespace: str) -> None:
        self._record("move_to_namespace", name, namespace)
        self._check_mode(namespace)
        self.links[name].namespace = namespace

    def set_link_up(self, name: str, namespace: str | None = None) -> None:
        self._record("set_link_up", name, namespace)
        self.links[name].up = True

    def add_address(self, link: str, address: str, namespace: str | None = None) -> None:
        self._record("add_address", link, address, namespace)
        self.links[link].addresses.add(address)

    def announce_address(self, link: str, address: str, namespace: str | None = None) -> None:
        self._record("announce_address", link, address, namespace)

    def delete_address(self, link: str, address: str, namespace: str | None = None) -> None:
        self._record("delete_address", link, address, namespace)
        if link in self.links:
            self.links[link].addresses.discard(address)

    def set_link_mtu(self, name: str, mtu: int, namespace: str | None = None) -> None:
        self._record("set_link_mtu", name, mtu, namespace)
        self._check_mode(name)
        self.mtus[name] = mtu

    def sync_routes(self, namespace: str, table: int | str, routes: Sequence[Route]) -> None:
        self._record("sync_routes", namespace, table, tuple(routes))
        self._check_mode(namespace)
        self.routes[(namespace, str(table))] = tuple(routes)

    def sync_source_rules(self, namespace: str, rules: Sequence[SourceRule]) -> None:
        self._record("sync_source_rules", namespace, tuple(rules))
        self._check_mode(namespace)
        self.rules[namespace] = tuple(rules)

    def set_forwarding(self, namespace: str, enabled: bool) -> None:
        self._record("set_forwarding", namespace, enabled)
        self._check_mode(namespace)
        self.forwarding[namespace] = enabled

    def validate_haproxy_config(self, config: Path, workdir: Path) -> None:
        self._record("validate_haproxy_config", config)
        if self._validator is not None:
            self._validator(config.read_text())

    def start_haproxy(self, files: HaproxyFiles, namespace: str | None = None) -> int:
        self._record("start_haproxy", files.config, namespace)
        if namespace is not None:
            self._check_mode(namespace)
        if files.config not in self.masters:
            self.masters[files.config] = next(self._pids)
            self.master_namespaces[files.config] = namespace
            self._load(files)
        return self.masters[files.config]

    def reload_haproxy(self, files: HaproxyFiles) -> None:
        self._record("reload_haproxy", files.config)
        if files.config not in self.masters:
            raise HaproxyReloadFailed("no haproxy master is running")
        if self.reload_error is not None:
            raise self.reload_error
        self._load(files)

    def stop_haproxy(self, files: HaproxyFiles) -> None:
        self._record("stop_haproxy", files.config)
        self.masters.pop(files.config, None)

    def haproxy_master_pid(self, files: HaproxyFiles) -> int | None:
        return self.masters.get(files.config)

    def haproxy_version(self) -> str:
        return "0.0-recording"

    def haproxy_loaded_value(self, files: HaproxyFiles, name: str) -> str | None:
        if files.config not in self.masters:
            return None
        return self.loaded.get(files.config, {}).get(name)

    def haproxy_run_as(self) -> tuple[str, str] | None:
        return self.run_as

    def _load(self, files: HaproxyFiles) -> None:
        """What a master reads from its file: here only the ``setenv`` lines."""
        values: dict[str, str] = {}
        for line in files.config.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) == 3 and words[0] == "setenv":
                values[words[1]] = words[2].strip('"')
        self.loaded[files.config] = values

    def haproxy_fd_limit(self) -> int | None:
        return self.fd_limit
