"""The amphora provider on fakes: what it allocates, what it sends, and its lease fence."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest

from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.errors import ConvergeError
from lbaas.model.enums import AmphoraStatus
from lbaas.model.graph import LoadBalancerId, NetworkId, Subnet, SubnetId
from lbaas.providers.amphora.driver import AmphoraProvider
from lbaas.providers.base import LeaseLost, ProviderContext
from lbaas.wire.versions import WIRE_VERSION
from tests.support.graphs import listener, load_balancer, member, pool

from .amphora_fakes import MemoryAmphoraStore, RecordingAgent

GRAPH = load_balancer(
    [listener("web", default_pool="web")],
    [pool("web", [member("a", "127.0.0.1", 9001, weight=3), member("b", "127.0.0.1", 9002)])],
)
CLAIM = Claim(GRAPH.id, generation=1, owner="worker-a", attempts=0, rebuild=False)


@pytest.fixture
def store() -> MemoryAmphoraStore:
    return MemoryAmphoraStore()


@pytest.fixture
def agent() -> RecordingAgent:
    return RecordingAgent()


@pytest.fixture
def provider(tmp_path: Path, store: MemoryAmphoraStore, agent: RecordingAgent) -> AmphoraProvider:
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    client: Any = agent
    return AmphoraProvider(ProviderContext(settings), store=store, client=client)


def test_apply_allocates_one_amphora_and_sends_text_with_its_facts(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agent: RecordingAgent
) -> None:
    result = provider.apply(GRAPH, CLAIM)
    assert result.serving and result.detail == "STARTED"
    [(amphora_id, amp)] = store.amphorae.items()
    assert amp.status is AmphoraStatus.ALLOCATED and amp.loadbalancer_id == GRAPH.id
    spec = agent.specs[amphora_id]
    facts = spec.haproxy_facts
    assert facts.runtime_socket == f"/srv/amphorae/{amphora_id}/stats.sock"
    assert f'stats socket "{facts.runtime_socket}"' in spec.haproxy_config
    assert sorted(s.weight for s in facts.servers) == [1, 3]
    provider.apply(GRAPH, CLAIM)
    assert list(store.amphorae) == [amphora_id]  # the same amphora, converged again


def test_a_weight_change_keeps_the_digest_and_changes_the_server(
    provider: AmphoraProvider, agent: RecordingAgent
) -> None:
    provider.apply(GRAPH, CLAIM)
    [before] = agent.specs.values()
    web = GRAPH.pools[0]
    heavier = replace(web, members=(replace(web.members[0], weight=9), web.members[1]))
    provider.apply(replace(GRAPH, pools=(heavier,)), CLAIM)
    [after] = agent.specs.values()
    assert after.haproxy_config != before.haproxy_config
    assert after.haproxy_facts.fixed_digest == before.haproxy_facts.fixed_digest
    assert sorted(s.weight for s in after.haproxy_facts.servers) == [1, 9]
    fewer = replace(web, members=web.members[:1])
    provider.apply(replace(GRAPH, pools=(fewer,)), CLAIM)
    [last] = agent.specs.values()
    assert last.haproxy_facts.fixed_digest != before.haproxy_facts.fixed_digest


def test_rebuild_retires_the_old_amphora_and_delete_retires_all(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agent: RecordingAgent
) -> None:
    provider.apply(GRAPH, CLAIM)
    [old] = store.amphorae
    provider.apply(GRAPH, CLAIM, rebuild=True)
    [new] = store.live_amphorae(GRAPH.id)
    assert new != old and store.amphorae[old].status is AmphoraStatus.DELETED
    assert agent.deleted == [old]
    provider.delete(LoadBalancerId(GRAPH.id), CLAIM)
    assert store.live_amphorae(GRAPH.id) == [] and agent.deleted == [old, new]


@pytest.mark.parametrize(
    ("mode", "wire_version", "new_first"),
    [
        ("netns", WIRE_VERSION, True),  # the new amphora serves, then the old one goes
        ("netns", None, False),  # an agent of the release before: old one out first
        ("loopback", WIRE_VERSION, False),  # both would need the VIP's ports
    ],
)
def test_a_rebuild_orders_the_new_amphora_and_the_old_ones_removal(
    provider: AmphoraProvider,
    store: MemoryAmphoraStore,
    agent: RecordingAgent,
    mode: Literal["loopback", "netns"],
    wire_version: int | None,
    new_first: bool,
) -> None:
    agent.mode, agent.wire_version = mode, wire_version
    provider.apply(GRAPH, CLAIM)
    [old] = store.amphorae
    provider.apply(GRAPH, CLAIM, rebuild=True)
    [new] = store.live_amphorae(GRAPH.id)
    expected = [("put", new), ("delete", old)] if new_first else [("delete", old), ("put", new)]
    assert agent.log[-2:] == expected
    assert store.amphorae[old].status is AmphoraStatus.DELETED


class FailingDelete(RecordingAgent):
    """An agent whose removals fail (its host UP and answering) while ``refuse`` holds."""

    refuse = True

    def delete_amphora(self, amphora_id: str) -> None:
        if self.refuse:
            raise ConvergeError("namespace busy")
        super().delete_amphora(amphora_id)


def test_a_rebuild_whose_removal_failed_resumes_its_new_amphora(
    tmp_path: Path, store: MemoryAmphoraStore
) -> None:
    agent = FailingDelete(mode="netns")
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    client: Any = agent
    provider = AmphoraProvider(ProviderContext(settings), store=store, client=client)
    provider.apply(GRAPH, CLAIM)
    [old] = store.amphorae
    with pytest.raises(ConvergeError):
        provider.apply(GRAPH, CLAIM, rebuild=True)
    [_, new] = store.live_amphorae(GRAPH.id)  # both live: the new one serves already
    agent.refuse = False
    provider.apply(GRAPH, CLAIM, rebuild=True)  # the job's retry
    assert store.live_amphorae(GRAPH.id) == [new]  # resumed, not a third amphora
    assert agent.deleted == [old] and len(store.amphorae) == 2


def test_a_worker_that_lost_its_lease_creates_nothing(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agent: RecordingAgent
) -> None:
    store.lost.add(CLAIM.owner)
    with pytest.raises(LeaseLost):
        provider.apply(GRAPH, CLAIM)
    assert store.amphorae == {} and store.ports == {}
    assert agent.calls == 0  # stopped before the agent was asked anything


def test_netns_member_ports_are_fenced_too(
    provider: AmphoraProvider, store: MemoryAmphoraStore, agent: RecordingAgent
) -> None:
    agent.mode = "netns"
    members = Subnet(SubnetId("s-members"), NetworkId("n-members"), "10.9.0.0/16", "10.9.0.1")
    graph = replace(GRAPH, vip=replace(GRAPH.vip, address="10.8.0.5"), subnets=(members,))
    provider.apply(graph, CLAIM)
    [(amphora_id, subnet_id)] = store.ports
    [leg] = agent.specs[amphora_id].network.member_networks
    assert subnet_id == "s-members" and leg.address == store.ports[(amphora_id, subnet_id)]
    other = replace(CLAIM, owner="worker-b")
    store.lost.add(other.owner)
    with pytest.raises(LeaseLost):
        provider.apply(graph, other, rebuild=True)
    assert store.live_amphorae(GRAPH.id) == [amphora_id] and len(store.ports) == 1
