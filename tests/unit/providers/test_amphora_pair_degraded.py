"""A pair whose other host is down: the survivor serves alone, the peer comes back later.

Two hosts, a pair across them, one host lost: its amphora is failed over, but the only
host left runs the survivor, so no peer can be placed. The rebuild does not fail the load
balancer: the survivor is MASTER, keeps a valid configuration naming its last peer's
address, and takes tenant changes; the next converge once a host is UP (the controller
queues it when a host comes UP, ``lbaas.db.amphorae.pair_repair``) adds the peer as BACKUP.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lbaas.model.enums import AmphoraRole, HostStatus
from lbaas.providers.amphora.placement import PairPlacementImpossible

from .amphora_fakes import MemoryPairStore, RecordingAgent
from .test_amphora_pair import CLAIM, GRAPH
from .test_amphora_pair_fleet import HOSTS, agents, hosts_of, provider_of, store

__all__ = ["agents", "store"]  # the fleet fixtures, shared


def test_a_lost_peer_with_no_host_to_take_it_is_rebuilt_when_one_comes_up(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    store.fleet[HOSTS[2]] = ("nova", 10, HostStatus.DOWN)
    provider = provider_of(tmp_path, store, agents)
    provider.apply(GRAPH, CLAIM)
    before = hosts_of(store)
    pair = {m.role: m for m in store.pair_members(GRAPH.id)}
    lost_host = before[AmphoraRole.MASTER]
    survivor_host = before[AmphoraRole.BACKUP]
    lost = pair[AmphoraRole.MASTER]
    agents[lost_host].unreachable = True
    store.fleet[next(h for h in HOSTS if h.host_id == lost_host)] = ("nova", 10, HostStatus.DOWN)
    store.fail(lost.amphora_id)

    provider.apply(GRAPH, CLAIM, rebuild=True)  # no host for a peer: degraded, not failed
    (alone,) = store.pair_members(GRAPH.id)
    assert alone.amphora_id == pair[AmphoraRole.BACKUP].amphora_id
    assert (alone.role, hosts_of(store)) == (AmphoraRole.MASTER, {"MASTER": survivor_host})
    spec = agents[survivor_host].specs[alone.amphora_id]
    assert spec.vrrp is not None and spec.vrrp.peer_address == lost.vrrp_address
    assert spec.vrrp.role == AmphoraRole.MASTER

    # A tenant change while degraded reaches the survivor.
    changed = replace(GRAPH, name="renamed")
    provider.apply(changed, CLAIM)
    assert len(store.pair_members(GRAPH.id)) == 1

    # A host comes UP: the converge it queues completes the pair, the new one BACKUP.
    store.fleet[HOSTS[2]] = ("nova", 10, HostStatus.UP)
    provider.apply(changed, CLAIM)
    after = hosts_of(store)
    assert after == {"MASTER": survivor_host, "BACKUP": "host-2"}
    members = {m.role: m for m in store.pair_members(GRAPH.id)}
    backup_spec = agents["host-2"].specs[members[AmphoraRole.BACKUP].amphora_id]
    assert backup_spec.vrrp is not None
    assert backup_spec.vrrp.peer_address == alone.vrrp_address
    master_spec = agents[survivor_host].specs[alone.amphora_id]
    assert master_spec.vrrp is not None
    assert master_spec.vrrp.peer_address == members[AmphoraRole.BACKUP].vrrp_address


def test_a_new_pair_with_one_host_is_still_refused(
    tmp_path: Path, store: MemoryPairStore, agents: dict[str, RecordingAgent]
) -> None:
    for where in HOSTS[1:]:
        store.fleet[where] = ("nova", 10, HostStatus.DOWN)
    with pytest.raises(PairPlacementImpossible):
        provider_of(tmp_path, store, agents).apply(GRAPH, CLAIM)
    assert store.pair_members(GRAPH.id) == []
