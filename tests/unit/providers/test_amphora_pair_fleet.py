"""ACTIVE_STANDBY over a fleet, on fakes: one recording agent per host.

The two amphorae of a pair go to two distinct live hosts of the zone, each spec to its
own host's agent; a pair that cannot be split is refused with the reason; a replacement
never lands beside the survivor; ``lbaas serve``'s own agent alone takes both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lbaas.config import load_settings
from lbaas.fleet.client_pool import AgentPool
from lbaas.model.enums import AmphoraRole, HostStatus
from lbaas.model.enums import AmphoraStatus as Status
from lbaas.model.fleet import HostAddress
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.amphora.placement import PairPlacementImpossible
from lbaas.providers.base import ProviderContext

from .amphora_fakes import MemoryPairStore, RecordingAgent, StoredAmphora
from .test_amphora_pair import CLAIM, GRAPH

HOSTS = [HostAddress(f"host-{i}", "127.0.0.1", 9440 + i) for i in range(3)]


@pytest.fixture
def agents() -> dict[str, RecordingAgent]:
    return {h.host_id: RecordingAgent(mode="netns") for h in HOSTS}


@pytest.fixture
def store() -> MemoryPairStore:
    memory = MemoryPairStore()
    for where in HOSTS:
        memory.fleet[where] = ("nova", 10, HostStatus.UP)
    return memory


def provider_of(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> AmphoraProvider:
    overrides = {"state_dir": str(tmp_path), "agent": {"mode": "netns"}}
    settings = load_settings(environ={}, overrides=overrides)
    legacy: Any = RecordingAgent(mode="netns", unreachable=True)  # no fleet member goes there
    pool = AgentPool(lambda host: agents[host.host_id], legacy)  # type: ignore[arg-type,return-value]
    return AmphoraProvider(ProviderContext(settings), store=store, agents=pool)


def hosts_of(store: MemoryPairStore) -> dict[str, str]:
    """Role -> host id of the live pair."""
    return {m.role: store.hosts[m.amphora_id].host_id for m in store.pair_members(GRAPH.id)}


def test_a_pair_goes_to_two_least_loaded_hosts_each_spec_to_its_own_agent(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    # host-0 already runs another load balancer's amphora: the pair takes host-1 and -2.
    store.amphorae["other"] = StoredAmphora("lb-other", "127.0.0.1", Status.ALLOCATED)
    store.hosts["other"] = HOSTS[0]
    provider = provider_of(tmp_path, store, agents)
    provider.apply(GRAPH, CLAIM)
    placed = hosts_of(store)
    assert sorted(placed.values()) == ["host-1", "host-2"]
    for member in store.pair_members(GRAPH.id):
        host_id = store.hosts[member.amphora_id].host_id
        assert list(agents[host_id].specs) == [member.amphora_id]
        assert store.amphorae[member.amphora_id].host == "127.0.0.1"


def test_a_pair_that_cannot_be_split_is_refused_and_nothing_is_built(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    store.fleet[HOSTS[1]] = ("nova", 10, HostStatus.DOWN)
    store.fleet[HOSTS[2]] = ("nova", 0, HostStatus.UP)  # no room
    provider = provider_of(tmp_path, store, agents)
    with pytest.raises(PairPlacementImpossible) as refused:
        provider.apply(GRAPH, CLAIM)
    assert "only 1" in refused.value.user_message
    assert store.amphorae == {}
    assert all(not a.specs for a in agents.values())


def test_a_failed_master_is_replaced_off_the_survivor_and_off_its_own_host(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    provider = provider_of(tmp_path, store, agents)
    provider.apply(GRAPH, CLAIM)
    before = hosts_of(store)
    master = {m.role: m.amphora_id for m in store.pair_members(GRAPH.id)}[AmphoraRole.MASTER]
    agents[before[AmphoraRole.MASTER]].unreachable = True  # its host is lost
    store.fail(master)
    provider.apply(GRAPH, CLAIM, rebuild=True)
    after = hosts_of(store)
    assert after[AmphoraRole.MASTER] == before[AmphoraRole.BACKUP]  # the survivor, promoted
    (spare,) = {h.host_id for h in HOSTS} - set(before.values())
    assert after[AmphoraRole.BACKUP] == spare
    assert master not in store.live_amphorae(GRAPH.id)


def test_with_the_survivor_and_the_failed_host_left_the_replacement_takes_the_failed_one(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    del store.fleet[HOSTS[2]]
    provider = provider_of(tmp_path, store, agents)
    provider.apply(GRAPH, CLAIM)
    before = hosts_of(store)
    backup = {m.role: m.amphora_id for m in store.pair_members(GRAPH.id)}[AmphoraRole.BACKUP]
    store.fail(backup)
    provider.apply(GRAPH, CLAIM, rebuild=True)
    assert hosts_of(store) == before  # never both on the MASTER's host
    assert backup in agents[before[AmphoraRole.BACKUP]].deleted


def test_serve_alone_puts_both_on_its_own_agent(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    local = HostAddress("local", "127.0.0.1", 9443)  # agent.host_id's default
    store.fleet = {local: ("nova", 10, HostStatus.UP)}
    agents["local"] = RecordingAgent(mode="netns")
    provider = provider_of(tmp_path, store, agents)
    provider.apply(GRAPH, CLAIM)
    assert set(hosts_of(store).values()) == {"local"}
    assert len(agents["local"].specs) == 2
