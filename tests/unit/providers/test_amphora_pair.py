"""ACTIVE_STANDBY in the amphora provider, on fakes: the pair, its specs, one-at-a-time failover.

The real keepalived and HAProxy pair is exercised in ``tests/e2e/agent/test_agent_e2e_vrrp.py``
and through ``lbaas serve`` in ``tests/e2e/amphora/test_active_standby_serve.py``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.errors import PermanentError
from lbaas.model.enums import AmphoraRole, Topology
from lbaas.model.graph import NetworkId, Subnet, SubnetId
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.amphora.topology import BACKUP_PRIORITY, MASTER_PRIORITY, vrrp_id_of
from lbaas.providers.base import ProviderContext
from tests.support.graphs import listener, load_balancer, member, pool

from .amphora_fakes import MemoryPairStore, RecordingAgent

VIP_SUBNET = Subnet(SubnetId("s-vip"), NetworkId("n-vip"), "10.0.0.0/24", "10.0.0.1")
GRAPH = replace(
    load_balancer(
        [listener("web", default_pool="web")],
        [pool("web", [member("a", "10.0.0.100", 9001)])],
        vip_address="10.0.0.5",
    ),
    topology=Topology.ACTIVE_STANDBY,
)
GRAPH = replace(GRAPH, vip=replace(GRAPH.vip, subnet_id=VIP_SUBNET.id), subnets=(VIP_SUBNET,))
CLAIM = Claim(GRAPH.id, generation=1, owner="worker-a", attempts=0, rebuild=False)


def _provider(tmp_path: Path, store: Any, agent: Any, mode: str) -> AmphoraProvider:
    overrides = {"state_dir": str(tmp_path), "agent": {"mode": mode}}
    settings = load_settings(environ={}, overrides=overrides)
    return AmphoraProvider(ProviderContext(settings), store=store, client=agent)


@pytest.fixture
def store() -> MemoryPairStore:
    return MemoryPairStore()


@pytest.fixture
def agent() -> RecordingAgent:
    return RecordingAgent(mode="netns")


@pytest.fixture
def provider(tmp_path: Path, store: MemoryPairStore, agent: RecordingAgent) -> AmphoraProvider:
    return _provider(tmp_path, store, agent, "netns")


def _roles(store: MemoryPairStore) -> dict[str, str]:
    return {m.role: m.amphora_id for m in store.pair_members(GRAPH.id)}


def test_a_pair_is_built_with_vrrp_and_peers(
    provider: AmphoraProvider, store: MemoryPairStore, agent: RecordingAgent
) -> None:
    provider.apply(GRAPH, CLAIM)
    roles = _roles(store)
    master, backup = roles[AmphoraRole.MASTER], roles[AmphoraRole.BACKUP]
    assert agent.log == [("put", master), ("put", backup)]  # the MASTER first
    for own, peer in ((master, backup), (backup, master)):
        spec = agent.specs[own]
        assert spec.vrrp is not None
        assert spec.vrrp.vrrp_id == vrrp_id_of(GRAPH.id)
        assert spec.vrrp.own_address == store.amphorae[own].pair.vrrp_address  # type: ignore[union-attr]
        assert spec.vrrp.peer_address == store.amphorae[peer].pair.vrrp_address  # type: ignore[union-attr]
        assert f"localpeer {own}" in spec.haproxy_config
        assert f"peer {peer} {spec.vrrp.peer_address}:1025" in spec.haproxy_config
        assert store.amphorae[own].vrrp_interface == f"vip-{own}"
    assert agent.specs[master].vrrp.priority == MASTER_PRIORITY  # type: ignore[union-attr]
    assert agent.specs[backup].vrrp.priority == BACKUP_PRIORITY  # type: ignore[union-attr]
    provider.apply(GRAPH, CLAIM)
    assert _roles(store) == roles and agent.deleted == []


def test_a_failed_master_alone_is_replaced_and_the_backup_promoted(
    provider: AmphoraProvider, store: MemoryPairStore, agent: RecordingAgent
) -> None:
    provider.apply(GRAPH, CLAIM)
    old = _roles(store)
    store.fail(old[AmphoraRole.MASTER])
    agent.log.clear()
    provider.apply(GRAPH, CLAIM, rebuild=True)
    new = _roles(store)
    assert new[AmphoraRole.MASTER] == old[AmphoraRole.BACKUP]
    assert new[AmphoraRole.BACKUP] not in old.values()
    assert agent.log[0] == ("delete", old[AmphoraRole.MASTER])
    assert agent.deleted == [old[AmphoraRole.MASTER]]
    assert agent.specs[new[AmphoraRole.MASTER]].vrrp.priority == MASTER_PRIORITY  # type: ignore[union-attr]


def test_load_balancer_failover_replaces_both_one_at_a_time_backup_first(
    provider: AmphoraProvider, store: MemoryPairStore, agent: RecordingAgent
) -> None:
    provider.apply(GRAPH, CLAIM)
    old = _roles(store)
    agent.log.clear()
    provider.apply(GRAPH, CLAIM, rebuild=True)
    deletes = [i for i, (call, _) in enumerate(agent.log) if call == "delete"]
    assert [agent.log[i][1] for i in deletes] == [old[AmphoraRole.BACKUP], old[AmphoraRole.MASTER]]
    # Between the two deletes, the pair was whole again (a new BACKUP was sent its spec).
    assert any(call == "put" for call, _ in agent.log[deletes[0] : deletes[1]])
    assert not set(_roles(store).values()) & set(old.values())
    assert len(store.live_amphorae(GRAPH.id)) == 2


def test_loopback_agents_refuse_active_standby(tmp_path: Path, store: MemoryPairStore) -> None:
    loopback = _provider(tmp_path, store, RecordingAgent(mode="loopback"), "loopback")
    allowed = loopback.capabilities().profile_values["loadbalancer_topology"]
    assert allowed == {Topology.SINGLE}
    assert "netns" in loopback.capabilities().profile_value_notes["loadbalancer_topology"]
    with pytest.raises(PermanentError, match="netns"):
        loopback.apply(GRAPH, CLAIM)
    assert store.amphorae == {}


def test_netns_capabilities_take_both_topologies(provider: AmphoraProvider) -> None:
    allowed = provider.capabilities().profile_values["loadbalancer_topology"]
    assert allowed == set(Topology)


class SlowBackupAgent(RecordingAgent):
    """A new amphora's keepalived needs three polls before it says BACKUP."""

    def put_amphora(self, amphora_id: str, spec: Any) -> Any:
        if amphora_id not in self.specs:
            self.starting[amphora_id] = 3
        return super().put_amphora(amphora_id, spec)

    def delete_amphora(self, amphora_id: str) -> None:
        self.log.append(("polled", ",".join(self.gets)))
        super().delete_amphora(amphora_id)


def test_the_master_is_removed_only_once_the_new_backup_runs_the_pair(
    tmp_path: Path, store: MemoryPairStore
) -> None:
    agent = SlowBackupAgent(mode="netns")
    provider = _provider(tmp_path, store, agent, "netns")
    provider.apply(GRAPH, CLAIM)
    old = _roles(store)
    agent.gets.clear()
    provider.apply(GRAPH, CLAIM, rebuild=True)  # load balancer failover: both, BACKUP first
    deletes = [(i, target) for i, (call, target) in enumerate(agent.log) if call == "delete"]
    assert [target for _, target in deletes] == [old[AmphoraRole.BACKUP], old[AmphoraRole.MASTER]]
    # Before the MASTER went, the new BACKUP was asked until it said BACKUP (3 + 1 polls).
    polled = agent.log[deletes[1][0] - 1]
    assert polled[0] == "polled"
    (first_new,) = set(polled[1].split(","))
    assert first_new not in old.values() and polled[1].count(first_new) == 4
    # The BACKUP went first with nothing asked: the MASTER kept the VIP meanwhile.
    assert agent.log[deletes[0][0] - 1] == ("polled", "")
