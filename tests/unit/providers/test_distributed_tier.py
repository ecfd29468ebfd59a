"""The distributed provider with an L4 tier: VIPs placed in groups, announced by their nodes.

Nodes are real ``L4NodeManager``s over recorded nft and a recording announcer (what the
node's BIRD would be told), as in ``test_distributed_provider``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lbaas.config import load_settings
from lbaas.errors import InvalidInput
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.host.recording import RecordingNftOps, RecordingVipAnnouncer, RecordingVipHolder
from lbaas.l4node.manager import L4NodeManager
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.base import Node, NodeDirectory
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.providers.distributed.placement import announcing_nodes, group_of
from lbaas.wire.l4 import L4ServiceSpec, L4ServiceStatus
from tests.unit.providers.test_distributed_provider import CLAIM, GRAPH, NeverProbes

VIP = "10.9.9.9"
#: What a node that masquerades the VIP's flows (entry, or tier NAT return) loads.
MASQUERADE = "add element ip lbaas entry_vips { 10.9.9.9 }"
GROUPS = {"g0": ("n0", "n1"), "g1": ("n2",)}


class TierNode:
    def __init__(self, root: Path, tier: bool) -> None:
        self.ops = RecordingNftOps()
        self.vips = RecordingVipHolder()
        self.announcer = RecordingVipAnnouncer() if tier else None
        checker = HealthChecker(NeverProbes(), lambda changes: None)
        engine = L4Engine(self.ops)
        self.manager = L4NodeManager(root, engine, checker, self.vips, self.announcer)

    def announced(self) -> frozenset[str]:
        assert self.announcer is not None
        return self.announcer.announced[-1] if self.announcer.announced else frozenset()

    def put_l4(self, spec: L4ServiceSpec) -> L4ServiceStatus:
        return self.manager.put(spec.loadbalancer_id, spec)

    def get_l4(
        self, lb_id: str, *, placement: bool = False, local: bool = False
    ) -> L4ServiceStatus | None:
        return self.manager.get(lb_id, placement=placement, local=local)

    def delete_l4(self, lb_id: str) -> None:
        self.manager.delete(lb_id)

    def close(self) -> None:
        pass


class TierFleet(NodeDirectory):
    """n0-n2 are tier nodes; n3 is a host with clients only (no BGP speaker)."""

    def __init__(self, tmp_path: Path) -> None:
        self.fakes = {f"n{i}": TierNode(tmp_path / f"n{i}", tier=i < 3) for i in range(4)}

    def nodes(self) -> list[Node]:
        return [Node(name, f"https://{name}:9443") for name in self.fakes]

    def client(self, node: Node) -> Any:
        return self.fakes[node.name]


class _Logged(list[frozenset[str]]):
    """An announcer's record that also logs, across nodes, who announced what in order."""

    def __init__(self, name: str, seen: list[tuple[str, frozenset[str]]]) -> None:
        super().__init__()
        self._name, self._seen = name, seen

    def append(self, vips: frozenset[str]) -> None:
        self._seen.append((self._name, vips))
        super().append(vips)


def provider_for(
    tmp_path: Path, fleet: TierFleet, placement: dict[str, str]
) -> DistributedProvider:
    tier = {"groups": GROUPS, "placement": placement}
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path), "tier": tier})
    return DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)


def test_the_vip_is_announced_by_its_groups_nodes_only_and_no_node_holds_it(
    tmp_path: Path,
) -> None:
    fleet = TierFleet(tmp_path)
    provider_for(tmp_path, fleet, {GRAPH.id: "g0"}).apply(GRAPH, CLAIM)
    for name, fake in fleet.fakes.items():
        in_group = name in GROUPS["g0"]
        if fake.announcer is not None:
            assert fake.announced() == (frozenset({VIP}) if in_group else frozenset()), name
        # Flows from the router come back through the node: the group's nodes masquerade.
        assert (MASQUERADE in fake.ops.loaded[-1]) == in_group, name
        assert fake.vips.held == set(), name  # no entry node with a tier
        status = fake.manager.get(GRAPH.id)
        assert status is not None and status.announce == in_group and not status.entry


def test_a_vip_moved_to_another_group_is_announced_there_and_withdrawn_here(
    tmp_path: Path,
) -> None:
    fleet = TierFleet(tmp_path)
    provider_for(tmp_path, fleet, {GRAPH.id: "g0"}).apply(GRAPH, CLAIM)
    moved = provider_for(tmp_path, fleet, {GRAPH.id: "g1"})
    seen: list[tuple[str, frozenset[str]]] = []
    for name in ("n0", "n1", "n2"):
        announcer = fleet.fakes[name].announcer
        assert announcer is not None
        announcer.announced = _Logged(name, seen)
    report = moved.report(GRAPH)  # the status poll reprograms nodes whose role changed
    assert report is not None
    # Make before break: the new group's node announces before the old group's withdraw.
    assert seen == [("n2", frozenset({VIP})), ("n0", frozenset()), ("n1", frozenset())]
    assert [fleet.fakes[n].announced() for n in ("n0", "n1", "n2")] == [
        frozenset(),
        frozenset(),
        frozenset({VIP}),
    ]
    moved.delete(GRAPH.id, CLAIM)
    assert fleet.fakes["n2"].announced() == frozenset()
    assert fleet.fakes["n2"].manager.get(GRAPH.id) is None


def test_a_node_without_a_bgp_speaker_refuses_to_announce(tmp_path: Path) -> None:
    node = TierNode(tmp_path, tier=False)
    spec = L4ServiceSpec(version=1, loadbalancer_id="lb", vip=VIP, announce=True)
    with pytest.raises(InvalidInput, match="no L4 tier node"):
        node.put_l4(spec)


def test_placement_spreads_load_balancers_and_an_override_wins() -> None:
    groups = {f"g{i}": (f"n{i}",) for i in range(4)}
    chosen = Counter(group_of(f"lb-{i}", groups, {}) for i in range(400))
    assert set(chosen) == set(groups) and min(chosen.values()) > 60
    # A new group takes only the VIPs it wins: the others stay where they were.
    more = {**groups, "g4": ("n4",)}
    for i in range(400):
        now = group_of(f"lb-{i}", more, {})
        assert now in ("g4", group_of(f"lb-{i}", groups, {}))
    assert group_of("lb-1", groups, {"lb-1": "g3"}) == "g3"
    assert announcing_nodes("lb-1", groups, {"lb-1": "gone"}) == frozenset()
    assert announcing_nodes("lb-1", {}, {}) == frozenset()


def test_a_flavors_tier_group_places_the_vip_unless_the_operator_placed_it(
    tmp_path: Path,
) -> None:
    hashed = group_of(GRAPH.id, GROUPS, {})
    other = next(group for group in GROUPS if group != hashed)
    flavored = dataclasses.replace(GRAPH, flavor={"tier_group": other})
    fleet = TierFleet(tmp_path)
    provider_for(tmp_path, fleet, {}).apply(flavored, CLAIM)
    announcing = {n for n, f in fleet.fakes.items() if f.announcer and f.announced()}
    assert announcing == set(GROUPS[other])
    # tier.placement is the operator's override: it wins over the flavor.
    assert group_of(GRAPH.id, GROUPS, {GRAPH.id: hashed}, other) == hashed
    # A group the deployment no longer has: the hash decides again.
    assert group_of(GRAPH.id, GROUPS, {}, "gone") == hashed


def test_the_tier_flavor_keys_take_this_deployments_groups_and_modes(tmp_path: Path) -> None:
    caps = provider_for(tmp_path, TierFleet(tmp_path), {}).capabilities()
    assert caps.profile_values["tier_group"] == frozenset(GROUPS)
    assert caps.profile_values["tier_return_mode"] == frozenset({"nat", "dsr"})
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    untiered = DistributedProvider(ProviderContext(settings), directory=TierFleet(tmp_path))
    assert untiered.capabilities().profile_values["tier_group"] == frozenset()
    assert "no L4 tier" in untiered.capabilities().profile_value_notes["tier_group"]
