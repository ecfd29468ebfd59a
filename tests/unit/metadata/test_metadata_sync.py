"""The metadata proxies' sync against a fake registry and a fake host.

A full sync at the first round and after the registry was unreachable (creates what is
missing, removes what is not needed, a previous agent's leftovers included); incremental
rounds touch only networks that gained their first port or lost their last one, and
restart a dead proxy; the signer's port view follows every round. The proxy's HAProxy
configuration is checked with the real ``haproxy -c``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lbaas.metadata.base import BoundPort, RegistryUnavailable
from lbaas.metadata.haproxy_config import NETWORK_ID_HEADER, proxy_config
from lbaas.metadata.proxy import StaticPortView
from lbaas.metadata.sync import MetadataSync

N1 = "11111111-1111-4111-8111-111111111111"
N2 = "22222222-2222-4222-8222-222222222222"
N3 = "33333333-3333-4333-8333-333333333333"


def port(network: str, address: str, device: str = "vm") -> BoundPort:
    return BoundPort(network, address, device, "project")


class FakeRegistry:
    def __init__(self) -> None:
        self.ports: list[BoundPort] = []
        self.down = False
        self.asked: list[str] = []

    def ports_of_host(self, host_id: str) -> list[BoundPort]:
        self.asked.append(host_id)
        if self.down:
            raise RegistryUnavailable("connection refused")
        return list(self.ports)


class FakeProxies:
    def __init__(self, present: frozenset[str] = frozenset()) -> None:
        self.running = set(present)
        self.dead: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.fail_remove = False

    def present(self) -> set[str]:
        return set(self.running)

    def ensure(self, network_id: str) -> None:
        self.calls.append(("ensure", network_id))
        self.running.add(network_id)
        self.dead.discard(network_id)

    def alive(self, network_id: str) -> bool:
        return network_id in self.running and network_id not in self.dead

    def remove(self, network_id: str) -> None:
        self.calls.append(("remove", network_id))
        if self.fail_remove:
            raise OSError("busy")
        self.running.discard(network_id)


def make(
    present: set[str] = frozenset(),
) -> tuple[MetadataSync, FakeRegistry, FakeProxies, StaticPortView]:  # type: ignore[assignment]
    registry, proxies, view = FakeRegistry(), FakeProxies(present), StaticPortView()
    return MetadataSync(registry, proxies, view, "h1"), registry, proxies, view


def test_first_round_is_a_full_sync_that_removes_leftovers() -> None:
    sync, registry, proxies, view = make(present=frozenset({N1, N3}))
    registry.ports = [port(N1, "10.0.0.5"), port(N2, "10.0.0.5", "vm2")]
    sync.sync_once()
    assert registry.asked == ["h1"]
    assert proxies.running == {N1, N2}
    assert ("remove", N3) in proxies.calls and ("ensure", N1) in proxies.calls
    assert sync.full_syncs == 1
    assert view.port_at(N2, "10.0.0.5") == port(N2, "10.0.0.5", "vm2")


def test_incremental_rounds_touch_only_changed_networks() -> None:
    sync, registry, proxies, view = make()
    registry.ports = [port(N1, "10.0.0.5")]
    sync.sync_once()
    proxies.calls.clear()
    registry.ports = [port(N1, "10.0.0.5"), port(N1, "10.0.0.6"), port(N2, "10.0.0.5")]
    sync.sync_once()
    assert proxies.calls == [("ensure", N2)]  # N1 already had a proxy
    registry.ports = [port(N2, "10.0.0.5")]  # N1's ports all left the host
    sync.sync_once()
    assert proxies.calls == [("ensure", N2), ("remove", N1)]
    assert view.port_at(N1, "10.0.0.5") is None
    assert sync.full_syncs == 1


def test_a_dead_proxy_is_restarted() -> None:
    sync, registry, proxies, _ = make()
    registry.ports = [port(N1, "10.0.0.5")]
    sync.sync_once()
    proxies.dead.add(N1)
    proxies.calls.clear()
    sync.sync_once()
    assert proxies.calls == [("ensure", N1)]


def test_reconnecting_is_a_full_sync() -> None:
    sync, registry, proxies, _ = make()
    registry.ports = [port(N1, "10.0.0.5")]
    sync.sync_once()
    registry.down = True
    sync.sync_once()
    assert proxies.running == {N1}  # nothing is torn down while the registry is away
    proxies.running.add(N3)  # left by someone while we were away
    registry.down = False
    registry.ports = [port(N2, "10.0.0.5")]
    sync.sync_once()
    assert sync.full_syncs == 2
    assert proxies.running == {N2}


def test_a_failed_removal_is_retried_by_a_full_sync() -> None:
    sync, registry, proxies, _ = make()
    registry.ports = [port(N1, "10.0.0.5")]
    sync.sync_once()
    registry.ports = []
    proxies.fail_remove = True
    sync.sync_once()
    assert proxies.running == {N1}
    proxies.fail_remove = False
    sync.sync_once()
    assert sync.full_syncs == 2 and proxies.running == set()


def test_a_network_id_unfit_for_a_namespace_name_gets_no_proxy() -> None:
    sync, registry, proxies, view = make()
    registry.ports = [port("../etc", "10.0.0.5"), port(N1, "10.0.0.5")]
    sync.sync_once()
    assert proxies.running == {N1}


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed")
def test_proxy_config_is_valid_haproxy_and_sets_the_identity_headers(tmp_path: Path) -> None:
    text = proxy_config(N1, tmp_path / "agent.sock")
    config = tmp_path / "haproxy.cfg"
    config.write_text(text)
    done = subprocess.run(["haproxy", "-c", "-f", str(config)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"set-header {NETWORK_ID_HEADER} {N1}" in text
    assert "del-header X-Instance-ID -m beg" in text and "del-header X-Tenant-ID" in text
    assert f"server agent unix@{tmp_path / 'agent.sock'}" in text


def test_a_socket_path_too_long_for_unix_sockets_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="too long"):
        proxy_config(N1, tmp_path / ("d" * 120) / "agent.sock")


class FailingProxies(FakeProxies):
    def ensure(self, network_id: str) -> None:
        self.calls.append(("ensure", network_id))
        raise OSError("haproxy will not start")


def test_a_proxy_that_will_not_start_is_retried_with_backoff() -> None:
    now = [0.0]
    registry, proxies, view = FakeRegistry(), FailingProxies(), StaticPortView()
    sync = MetadataSync(registry, proxies, view, "h1", clock=lambda: now[0])
    registry.ports = [port(N1, "10.0.0.5")]
    sync.sync_once()  # full: fails
    for _ in range(5):
        sync.sync_once()  # within the first second: no retry
    assert proxies.calls == [("ensure", N1)]
    now[0] = 1.5
    sync.sync_once()
    sync.sync_once()
    assert len(proxies.calls) == 2  # retried once, next after 2 s more
    now[0] = 3.0
    sync.sync_once()
    assert len(proxies.calls) == 2
    now[0] = 3.6
    sync.sync_once()
    assert len(proxies.calls) == 3
