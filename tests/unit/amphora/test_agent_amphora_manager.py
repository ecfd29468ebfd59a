"""AmphoraRegistry: idempotent PUT, version order, mode checks, delete, restore, supervise."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from agent_fakes import FakeRuntime, make_config, spec_fields

from lbaas.amphora.plumbing import namespace_name
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.errors import Conflict, InvalidInput, InvalidRenderedConfig
from lbaas.host.recording import RecordingHostOps
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.model.graph import ListenerId
from lbaas.wire.amphora import AmphoraSpec, NetworkSpec, VipSpec
from lbaas.wire.datapath import ListenerPort, UdpListener, UdpMember, VipFilter
from tests.support.waiting import wait_until


def _spec(root: Path, version: int = 1, vip: str = "127.0.10.5", **kw: object) -> AmphoraSpec:
    return AmphoraSpec(
        version=version,
        loadbalancer_id="lb-1",
        **spec_fields(make_config(root / "amp-1", **kw)),  # type: ignore[arg-type]
        vip=VipSpec(address=vip, subnet_cidr=f"{vip}/24", network_id="net"),
    )


@pytest.fixture
def host() -> RecordingHostOps:
    return RecordingHostOps(allow_namespaces=False)


@pytest.fixture
def manager(tmp_path: Path, host: RecordingHostOps, runtime: FakeRuntime) -> AmphoraRegistry:
    return AmphoraRegistry(tmp_path, host, runtime_api=runtime.factory())


def test_put_twice_is_a_noop(
    manager: AmphoraRegistry, host: RecordingHostOps, tmp_path: Path
) -> None:
    first = manager.put("amp-1", _spec(tmp_path))
    assert first.running and first.applied_version == 1 and first.last_outcome == "STARTED"
    second = manager.put("amp-1", _spec(tmp_path))
    assert second.master_pid == first.master_pid and second.reloads == 0
    assert second.last_outcome == "UNCHANGED"
    assert host.count("start_haproxy") == 1 and host.count("reload_haproxy") == 0


def test_older_version_is_refused(manager: AmphoraRegistry, tmp_path: Path) -> None:
    manager.put("amp-1", _spec(tmp_path, version=5))
    with pytest.raises(Conflict):
        manager.put("amp-1", _spec(tmp_path, version=4, weight=3))
    status = manager.put("amp-1", _spec(tmp_path, version=6, weight=3))
    assert status.applied_version == 6 and status.last_outcome == "RUNTIME_API"


def test_loopback_mode_needs_a_loopback_vip(manager: AmphoraRegistry, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="loopback"):
        manager.put("amp-1", _spec(tmp_path, vip="10.0.0.5"))


def test_bad_amphora_id_is_refused(manager: AmphoraRegistry, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        manager.put("../etc", _spec(tmp_path))


def test_failure_is_kept_as_last_error(tmp_path: Path, runtime: FakeRuntime) -> None:
    def refuse(text: str) -> None:
        raise InvalidRenderedConfig("refused", "[ALERT] parsing error")

    manager = AmphoraRegistry(tmp_path, RecordingHostOps(refuse), runtime_api=runtime.factory())
    with pytest.raises(InvalidRenderedConfig):
        manager.put("amp-1", _spec(tmp_path))
    status = manager.get("amp-1")
    assert status is not None and status.last_error == "[ALERT] parsing error"
    assert status.applied_version is None and not status.running


def test_delete_stops_and_removes_and_is_idempotent(
    manager: AmphoraRegistry, host: RecordingHostOps, tmp_path: Path
) -> None:
    manager.put("amp-1", _spec(tmp_path))
    manager.delete("amp-1")
    assert manager.get("amp-1") is None and not (tmp_path / "amp-1").exists()
    assert host.masters == {}
    manager.delete("amp-1")
    # A short id: the registry checks HAProxy's 97-byte socket path even for an id it never
    # had, and pytest's temporary path leaves little room.
    manager.delete("gone")


def test_restore_finds_applied_amphorae_and_supervise_restarts_them(
    manager: AmphoraRegistry, host: RecordingHostOps, tmp_path: Path, runtime: FakeRuntime
) -> None:
    manager.put("amp-1", _spec(tmp_path, version=3))
    host.masters.clear()  # the whole host rebooted, say
    again = AmphoraRegistry(tmp_path, host, runtime_api=runtime.factory())
    assert again.restore() == ["amp-1"]
    status = again.get("amp-1")
    assert status is not None and status.applied_version == 3 and not status.running
    assert again.supervise() == ["amp-1"]
    restarted = again.get("amp-1")
    assert restarted is not None and restarted.running and restarted.restarts == 1
    assert again.supervise() == []


def test_health_reports_skip_amphorae_without_statistics(
    manager: AmphoraRegistry, runtime: FakeRuntime, tmp_path: Path
) -> None:
    manager.put("amp-1", _spec(tmp_path))
    runtime.stat_rows = ["fe_l1,FRONTEND,1,100,5,10,20,0,OPEN,,"]
    [(amphora_id, report)] = manager.health_reports()
    assert amphora_id == "amp-1" and report.loadbalancer_id == "lb-1"
    assert report.listeners[ListenerId("l1")].counters.total_connections == 5
    runtime.reachable = False
    assert manager.health_reports() == []


def test_a_read_that_misses_its_deadline_goes_out_with_the_next_heartbeat(
    manager: AmphoraRegistry, runtime: FakeRuntime, tmp_path: Path
) -> None:
    # On a busy host every read may take a little longer than the deadline; dropping the
    # late ones would leave the amphora without statistics for good.
    manager.put("amp-1", _spec(tmp_path))
    runtime.stat_rows = ["fe_l1,FRONTEND,1,100,5,10,20,0,OPEN,,"]
    first, second = threading.Event(), threading.Event()
    runtime.stat_gate = first
    try:
        assert manager.health_reports() == []  # the read is still waiting
        runtime.stat_gate = second  # the next round's read will be late too
        first.set()
        wait_until(lambda: runtime.stats_answered == 1, 10, "the first read to end")
        [(amphora_id, report)] = manager.health_reports()
        assert amphora_id == "amp-1"
        assert report.listeners[ListenerId("l1")].counters.total_connections == 5
        # Delivered once: the next round has only its own read, still waiting.
        assert manager.health_reports() == []
    finally:
        first.set()
        second.set()


def test_netns_mode_plumbs_and_unplumbs(tmp_path: Path, runtime: FakeRuntime) -> None:
    host = RecordingHostOps()
    nft: list[RecordingNftOps] = []

    def nft_ops(namespace: str) -> RecordingNftOps:
        nft.append(RecordingNftOps())
        return nft[-1]

    manager = AmphoraRegistry(
        tmp_path, host, mode="netns", runtime_api=runtime.factory(), nft_ops=nft_ops
    )
    spec = AmphoraSpec(
        version=1,
        loadbalancer_id="lb-1",
        **spec_fields(make_config(tmp_path / "amp-1")),
        vip=VipSpec(
            address="10.1.0.5", subnet_cidr="10.1.0.0/24", network_id="net", gateway="10.1.0.1"
        ),
        network=NetworkSpec(vip_host_address="10.1.0.1"),
        vip_filter=VipFilter(listener_ports=(ListenerPort(protocol="tcp", port=80),)),
    )
    status = manager.put("amp-1", spec)
    # The filter was checked before HAProxy's change and loaded after it.
    assert len(nft) == 1 and nft[0].checked and nft[0].loaded[0] == nft[0].checked[0]
    assert "tcp dport 80 accept" in nft[0].loaded[0]
    assert host.forwarding == {namespace_name("amp-1"): False}  # no UDP listener
    assert [r.source for r in host.rules[namespace_name("amp-1")]] == ["10.1.0.5"]
    assert status.namespace == namespace_name("amp-1")
    assert host.namespaces == {namespace_name("amp-1")}
    # The VIP is announced once HAProxy serves it: a failover's new amphora is built while
    # the old one still serves, and the neighbours move only when it can take over.
    steps = [name for name, _ in host.calls]
    assert steps.index("announce_address") > steps.index("start_haproxy")
    assert host.master_namespaces[tmp_path / "amp-1" / "haproxy.cfg"] == namespace_name("amp-1")
    host.namespaces.clear()  # someone deleted it: supervise puts it back
    manager.supervise()
    assert host.namespaces == {namespace_name("amp-1")}
    assert len(nft) == 2 and nft[1].loaded  # the new namespace got its filter again
    next_life = AmphoraRegistry(
        tmp_path, host, mode="netns", runtime_api=runtime.factory(), nft_ops=nft_ops
    )
    assert next_life.restore() == ["amp-1"] and len(nft) == 3  # its tables are read again
    manager.delete("amp-1")
    assert host.namespaces == set() and host.links == {}


def test_loopback_mode_refuses_udp_listeners(manager: AmphoraRegistry, tmp_path: Path) -> None:
    spec = _spec(tmp_path).model_copy(
        update={
            "udp_listeners": (
                UdpListener(
                    listener_id="l-udp",
                    port=53,
                    table_size=251,
                    members=(UdpMember(key="m1", address="10.2.0.11", port=5353),),
                ),
            )
        }
    )
    with pytest.raises(InvalidInput, match="loopback mode"):
        manager.put("amp-1", spec)
    assert manager.get("amp-1") is None  # refused before anything was made
