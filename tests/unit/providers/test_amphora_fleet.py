"""The amphora provider over a fleet, on fakes: one recording agent per host.

The store places amphorae on hosts (``MemoryAmphoraStore.fleet``), and the provider must
talk to the agent of the host each amphora is on, rebuild a failed-over amphora on
another host, and retire one whose host is lost without waiting for that host.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.errors import AgentUnreachable
from lbaas.fleet.client_pool import AgentPool
from lbaas.model.enums import AmphoraStatus, HostStatus
from lbaas.model.fleet import HostAddress
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.base import ProviderContext
from tests.support.graphs import listener, load_balancer

from .amphora_fakes import MemoryAmphoraStore, RecordingAgent

HOSTS = [HostAddress(f"host-{i}", "127.0.0.1", 9440 + i) for i in range(3)]


def graph(name: str, zone: str | None = None) -> Any:
    base = load_balancer([listener("web")], [])
    return replace(base, id=f"lb-{name}", availability_zone=zone)


def claim(lb: Any, rebuild: bool = False) -> Claim:
    return Claim(lb.id, generation=1, owner="w", attempts=0, rebuild=rebuild)


@pytest.fixture
def agents() -> dict[str, RecordingAgent]:
    return {h.host_id: RecordingAgent() for h in HOSTS}


@pytest.fixture
def store() -> MemoryAmphoraStore:
    memory = MemoryAmphoraStore()
    for where, zone in zip(HOSTS, ("nova", "nova", "rack-b"), strict=True):
        memory.fleet[where] = (zone, 10, HostStatus.UP)
    memory.zone_of["b"] = "rack-b"
    return memory


@pytest.fixture
def provider(
    tmp_path: Path, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> AmphoraProvider:
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    legacy: Any = RecordingAgent(unreachable=True)  # no amphora may go to the legacy agent
    pool = AgentPool(lambda host: agents[host.host_id], legacy)  # type: ignore[arg-type,return-value]
    return AmphoraProvider(ProviderContext(settings), store=store, agents=pool)


def test_amphorae_spread_over_hosts_and_each_host_agent_gets_its_own(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> None:
    for i in range(6):
        provider.apply(graph(str(i)), claim(graph(str(i))))
    per_host = {h: sorted(a.specs) for h, a in agents.items()}
    assert [len(v) for v in per_host.values()] == [2, 2, 2]
    for host_id, amphorae in per_host.items():
        assert all(store.hosts[a].host_id == host_id for a in amphorae)


def test_an_availability_zone_maps_to_the_hosts_declaring_its_compute_zone(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> None:
    for i in range(3):
        provider.apply(graph(f"z{i}", zone="b"), claim(graph(f"z{i}")))
    assert store.zones_asked == ["rack-b"] * 3
    assert len(agents["host-2"].specs) == 3
    assert not agents["host-0"].specs and not agents["host-1"].specs


def placed_then_lost(
    provider: AmphoraProvider,
    store: MemoryAmphoraStore,
    agents: dict[str, RecordingAgent],
    name: str,
) -> tuple[Any, str, HostAddress]:
    """One load balancer placed, then its host's agent unreachable."""
    lb = graph(name)
    provider.apply(lb, claim(lb))
    [amphora] = store.amphorae
    where = store.hosts[amphora]
    agents[where.host_id].unreachable = True
    return lb, amphora, where


def test_failover_rebuilds_on_another_host_even_when_the_old_one_is_unreachable(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> None:
    lb, old, where = placed_then_lost(provider, store, agents, "x")
    lost = where.host_id
    provider.apply(lb, claim(lb, rebuild=True), rebuild=True)
    assert store.amphorae[old].status is AmphoraStatus.DELETED
    [new] = store.live_amphorae(lb.id)
    assert store.hosts[new].host_id != lost
    assert new in agents[store.hosts[new].host_id].specs


def test_delete_skips_a_down_host_but_not_an_up_one_that_is_unreachable(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> None:
    lb, amphora, where = placed_then_lost(provider, store, agents, "y")
    with pytest.raises(AgentUnreachable):  # UP but silent: maybe a blip, so retry
        provider.delete(lb.id, claim(lb))
    store.fleet[where] = (store.fleet[where][0], 10, HostStatus.DOWN)
    provider.delete(lb.id, claim(lb))  # DOWN: removed from it when it is back
    assert store.amphorae[amphora].status is AmphoraStatus.DELETED


def test_a_retried_rebuild_resumes_its_amphora_instead_of_retiring_another(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> None:
    lb = graph("r")
    provider.apply(lb, claim(lb))
    [original] = store.amphorae
    for host_id, agent in agents.items():
        agent.unreachable = host_id != store.hosts[original].host_id
    for _ in range(3):  # the rebuild job retries while the new host's agent is away
        with pytest.raises(AgentUnreachable):
            provider.apply(lb, claim(lb, rebuild=True), rebuild=True)
    for agent in agents.values():
        agent.unreachable = False
    provider.apply(lb, claim(lb, rebuild=True), rebuild=True)
    retired = [a for a, amp in store.amphorae.items() if amp.status is AmphoraStatus.DELETED]
    assert retired == [original]
    [serving] = store.live_amphorae(lb.id)
    assert store.amphorae[serving].status is AmphoraStatus.ALLOCATED
    assert len(store.amphorae) == 2


def test_a_retried_rebuild_placed_on_a_host_now_down_is_placed_again(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agents: dict[str, RecordingAgent]
) -> None:
    lb = graph("d")
    provider.apply(lb, claim(lb))
    [original] = store.amphorae
    for agent in agents.values():
        agent.unreachable = True
    agents[store.hosts[original].host_id].unreachable = False
    with pytest.raises(AgentUnreachable):
        provider.apply(lb, claim(lb, rebuild=True), rebuild=True)
    [first_try] = [a for a in store.amphorae if a != original]
    lost = store.hosts[first_try]
    store.fleet[lost] = (store.fleet[lost][0], 10, HostStatus.DOWN)
    for agent in agents.values():
        agent.unreachable = False
    provider.apply(lb, claim(lb, rebuild=True), rebuild=True)
    [serving] = store.live_amphorae(lb.id)
    assert serving not in (original, first_try)
    assert store.hosts[serving] != lost


class CountedAgent(RecordingAgent):
    def __init__(self) -> None:
        super().__init__()
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


def test_a_failover_removal_reaches_the_old_host_on_a_new_connection(
    tmp_path: Path, store: MemoryAmphoraStore
) -> None:
    """Not on the pooled client: a kept connection to a host partitioned since skips the
    connect and waits the whole read timeout (30 s held a partitioned MASTER's
    replacement); a new one fails within the connect timeout."""
    agents = {h.host_id: CountedAgent() for h in HOSTS}
    made: list[str] = []

    def factory(host: HostAddress) -> Any:
        made.append(host.host_id)
        return agents[host.host_id]

    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    pool = AgentPool(factory, RecordingAgent(unreachable=True))  # type: ignore[arg-type]
    provider = AmphoraProvider(ProviderContext(settings), store=store, agents=pool)
    lb = graph("fresh")
    provider.apply(lb, claim(lb))
    [old] = store.amphorae
    host = store.hosts[old].host_id
    assert made == [host]  # the pooled client, kept
    provider.apply(lb, claim(lb, rebuild=True), rebuild=True)
    assert agents[host].deleted == [old]
    assert made.count(host) == 2 and agents[host].closes == 1  # a new client, closed
