"""The distributed provider's tier VIPs in direct server return (``tier.return_mode = dsr``).

Nodes are real ``L4NodeManager``s over recorded nft, a recording announcer and a recording
DSR router, as in ``test_distributed_tier``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lbaas.config import load_settings
from lbaas.errors import InvalidInput
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.host.base import NftCommandFailed
from lbaas.l4.host.recording import (
    RecordingDsrRouter,
    RecordingNftOps,
    RecordingVipAnnouncer,
    RecordingVipHolder,
)
from lbaas.l4.service import L4Service
from lbaas.l4node.manager import L4NodeManager
from lbaas.model.enums import LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.base import Node, NodeDirectory
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.tier import dsr
from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceSpec, L4ServiceStatus
from tests.support.graphs import listener, load_balancer, member, pool
from tests.unit.providers.test_distributed_provider import CLAIM, NeverProbes

VIP = "10.9.9.9"
#: What a node that masquerades the VIP's flows (entry, or tier NAT return) loads.
MASQUERADE = "add element ip lbaas entry_vips { 10.9.9.9 }"
GROUPS = {"g0": ("n0", "n1"), "g1": ("n2",)}
DSR_GRAPH = load_balancer(
    [listener("tcp", ListenerProtocol.TCP, 80, default_pool="tcp")],
    [
        pool(
            "tcp",
            [member("a", "10.9.0.1", 80), member("b", "10.9.0.2", 80)],
            protocol=PoolProtocol.TCP,
            algorithm=LbAlgorithm.SOURCE_IP_PORT,
        )
    ],
    vip_address=VIP,
)


class _OrderedAnnouncer(RecordingVipAnnouncer):
    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self._order = order

    def announce(self, vips: frozenset[str]) -> None:
        self._order.append(f"announce {sorted(vips)}")
        super().announce(vips)


class _OrderedDsr(RecordingDsrRouter):
    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self._order = order

    def apply(self, services: Sequence[L4Service]) -> None:
        self._order.append(f"dsr {[service.vip for service in services]}")
        super().apply(services)


class DsrNode:
    """A tier node whose announcer and DSR router log, in one list, what they were told."""

    def __init__(self, root: Path, order: list[str]) -> None:
        self.ops = RecordingNftOps()
        self.dsr = _OrderedDsr(order)
        checker = HealthChecker(NeverProbes(), lambda changes: None)
        self.manager = L4NodeManager(
            root, L4Engine(self.ops), checker, RecordingVipHolder(), _OrderedAnnouncer(order),
            self.dsr,
        )  # fmt: skip

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


class DsrFleet(NodeDirectory):
    def __init__(self, tmp_path: Path) -> None:
        self.order: dict[str, list[str]] = {f"n{i}": [] for i in range(3)}
        self.fakes = {name: DsrNode(tmp_path / name, self.order[name]) for name in self.order}

    def nodes(self) -> list[Node]:
        return [Node(name, f"https://{name}:9443") for name in self.fakes]

    def client(self, node: Node) -> Any:
        return self.fakes[node.name]


def provider_for(tmp_path: Path, fleet: DsrFleet, mode: str) -> DistributedProvider:
    tier = {"groups": GROUPS, "placement": {DSR_GRAPH.id: "g0"}, "return_mode": mode}
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path), "tier": tier})
    return DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)


def test_the_groups_nodes_program_dsr_before_announcing_and_do_not_masquerade(
    tmp_path: Path,
) -> None:
    fleet = DsrFleet(tmp_path)
    provider = provider_for(tmp_path, fleet, "dsr")
    provider.apply(DSR_GRAPH, CLAIM)
    for name in GROUPS["g0"]:
        fake = fleet.fakes[name]
        assert fleet.order[name] == [f"dsr {[VIP]}", f"announce {[VIP]}"], name
        (service,) = fake.dsr.applied[-1]
        assert dsr.member_addresses([service]) == ["10.9.0.1", "10.9.0.2"]
        assert MASQUERADE not in fake.ops.loaded[-1], name  # replies never cross the node
        status = fake.get_l4(DSR_GRAPH.id)
        assert status is not None and status.announce
    # The other group's node carries the load balancer for its own clients, nothing more.
    assert fleet.order["n2"] == [] and fleet.fakes["n2"].get_l4(DSR_GRAPH.id) is not None

    provider.delete(DSR_GRAPH.id, CLAIM)
    for name in GROUPS["g0"]:
        assert fleet.order[name][-2:] == ["announce []", "dsr []"], name  # withdrawn first


def test_nat_mode_programs_no_dsr_and_masquerades(tmp_path: Path) -> None:
    fleet = DsrFleet(tmp_path)
    provider_for(tmp_path, fleet, "nat").apply(DSR_GRAPH, CLAIM)
    for name in GROUPS["g0"]:
        assert fleet.order[name] == [f"announce {[VIP]}"], name
        assert MASQUERADE in fleet.fakes[name].ops.loaded[-1], name


def test_a_flavor_chooses_the_return_mode_of_its_load_balancer(tmp_path: Path) -> None:
    fleet = DsrFleet(tmp_path)
    flavored = dataclasses.replace(DSR_GRAPH, flavor={"tier_return_mode": "dsr"})
    provider_for(tmp_path, fleet, "nat").apply(flavored, CLAIM)  # the deployment says nat
    for name in GROUPS["g0"]:
        assert fleet.order[name] == [f"dsr {[VIP]}", f"announce {[VIP]}"], name
        assert MASQUERADE not in fleet.fakes[name].ops.loaded[-1], name
    fleet = DsrFleet(tmp_path / "again")
    flavored = dataclasses.replace(DSR_GRAPH, flavor={"tier_return_mode": "nat"})
    provider_for(tmp_path, fleet, "dsr").apply(flavored, CLAIM)  # and the other way round
    for name in GROUPS["g0"]:
        assert fleet.order[name] == [f"announce {[VIP]}"], name


class _FailingOps(RecordingNftOps):
    """Recorded nft that refuses every load while ``failing``."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def load(self, ruleset: str) -> None:
        if self.failing:
            raise NftCommandFailed(["nft", "-f", "-"], 1, "refused")
        super().load(ruleset)


class _FailingDsr(RecordingDsrRouter):
    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def apply(self, services: Sequence[L4Service]) -> None:
        if self.failing:
            raise NftCommandFailed(["ip", "rule"], 2, "refused")
        super().apply(services)


def _spec(
    version: int, port: int = 80, mode: str = "dsr", address: str = "10.9.0.1"
) -> L4ServiceSpec:
    listener = L4ListenerSpec(
        id="l",
        protocol="tcp",
        port=80,
        hash_key="five_tuple",
        table_size=251,
        members=(L4MemberSpec(id="m", address=address, port=port, weight=1),),
    )
    return L4ServiceSpec(
        version=version,
        loadbalancer_id="lb",
        vip=VIP,
        announce=True,
        return_mode=mode,
        listeners=(listener,),
    )


def _node(
    tmp_path: Path, ops: RecordingNftOps, router: RecordingDsrRouter | None
) -> tuple[L4NodeManager, RecordingVipAnnouncer]:
    announcer = RecordingVipAnnouncer()
    checker = HealthChecker(NeverProbes(), lambda changes: None)
    manager = L4NodeManager(
        tmp_path, L4Engine(ops), checker, RecordingVipHolder(), announcer, router
    )
    return manager, announcer


def test_dsr_refuses_members_on_another_port(tmp_path: Path) -> None:
    router = RecordingDsrRouter()
    manager, _ = _node(tmp_path, RecordingNftOps(), router)
    with pytest.raises(InvalidInput, match="cannot change the port"):
        manager.put("lb", _spec(1, port=8000))
    assert manager.ids() == [] and router.applied == []


def test_a_node_without_a_dsr_router_refuses_dsr(tmp_path: Path) -> None:
    manager, _ = _node(tmp_path, RecordingNftOps(), None)
    with pytest.raises(InvalidInput, match="DSR"):
        manager.put("lb", _spec(1))


def test_a_vip_whose_table_cannot_be_programmed_is_withdrawn_until_it_is(
    tmp_path: Path,
) -> None:
    ops = _FailingOps()
    manager, announcer = _node(tmp_path, ops, RecordingDsrRouter())
    manager.put("lb", _spec(1, mode="nat"))
    assert announcer.announced[-1] == frozenset({VIP})
    ops.failing = True
    with pytest.raises(NftCommandFailed):
        manager.put("lb", _spec(2, mode="nat", address="10.9.0.2"))
    assert announcer.announced[-1] == frozenset()
    status = manager.get("lb")
    assert status is not None and status.last_error is not None
    ops.failing = False
    manager.put("lb", _spec(3, mode="nat", address="10.9.0.2"))
    assert announcer.announced[-1] == frozenset({VIP})


def test_a_dsr_vip_whose_dsr_table_cannot_be_programmed_is_withdrawn(tmp_path: Path) -> None:
    router = _FailingDsr()
    manager, announcer = _node(tmp_path, RecordingNftOps(), router)
    manager.put("lb", _spec(1))
    assert announcer.announced[-1] == frozenset({VIP})
    router.failing = True
    with pytest.raises(NftCommandFailed):
        manager.put("lb", _spec(2, address="10.9.0.2"))  # a new member: a new DSR table
    assert announcer.announced[-1] == frozenset()
    status = manager.get("lb")
    assert status is not None and status.last_error is not None
    router.failing = False
    manager.put("lb", _spec(3, address="10.9.0.2"))
    assert announcer.announced[-1] == frozenset({VIP})


def test_a_stopping_agent_withdraws_everything_and_announces_no_more(tmp_path: Path) -> None:
    manager, announcer = _node(tmp_path, RecordingNftOps(), RecordingDsrRouter())
    manager.put("lb", _spec(1))
    manager.withdraw_all()
    assert announcer.announced[-1] == frozenset()
    manager.put("lb", _spec(2))
    assert announcer.announced[-1] == frozenset()
