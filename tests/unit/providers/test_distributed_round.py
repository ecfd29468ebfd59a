"""One status round reads each node once, and one health batch is one nft transaction.

Issue 34: the health manager's poll asked every node about every load balancer in turn,
and a node re-applied a health batch one load balancer (one ``nft``) at a time, so both
grew with the load balancers a node carries. Fake nodes are real ``L4NodeManager``s over
a recording NftOps (``test_distributed_provider``).
"""

from __future__ import annotations

from pathlib import Path

from lbaas.config import load_settings
from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import HealthChange
from lbaas.l4.host.recording import RecordingNftOps, RecordingVipHolder
from lbaas.l4node.manager import L4NodeManager
from lbaas.model.enums import HealthMonitorType, LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.model.graph import LoadBalancer
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.providers.distributed.translate import service_spec
from tests.support.graphs import listener, load_balancer, member, monitor, pool
from tests.unit.providers.test_distributed_provider import CLAIM, Fleet, NeverProbes


def graph(n: int) -> LoadBalancer:
    members = [member(f"{n}-{i}", f"10.8.{n}.{i}", 8000) for i in (1, 2, 3)]
    return load_balancer(
        [listener(f"{n}", ListenerProtocol.TCP, 80, default_pool=f"{n}")],
        [
            pool(
                f"{n}",
                members,
                protocol=PoolProtocol.TCP,
                algorithm=LbAlgorithm.SOURCE_IP_PORT,
                hm=monitor(f"{n}", HealthMonitorType.TCP),
            )
        ],
        vip_address=f"10.8.{n}.100",
        ident=f"{n + 1:08d}-0000-4000-8000-000000000000",  # table names: 12 first digits
    )


GRAPHS = [graph(n) for n in range(3)]


def provider_over(fleet: Fleet, tmp_path: Path) -> DistributedProvider:
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    return DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)


def test_a_round_reads_each_node_once_whatever_the_load_balancers(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, 3)
    provider = provider_over(fleet, tmp_path)
    for g in GRAPHS:
        provider.apply(g, CLAIM)
    for fake in fleet.fakes.values():
        fake.single_gets = 0
    views = provider.node_views()
    reports = [provider.report(g, round_views=views) for g in GRAPHS]
    assert all(report is not None for report in reports)
    assert [fake.single_gets for fake in fleet.fakes.values()] == [0, 0, 0]


def test_a_node_silent_this_round_does_not_vote_and_is_not_asked_again(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, 3)
    provider = provider_over(fleet, tmp_path)
    provider.apply(GRAPHS[0], CLAIM)
    silent = fleet.fakes["n2"]
    silent.reachable = False
    views = provider.node_views()
    assert set(views.by_node) == {"n0", "n1"}
    silent.reachable = True  # back after the round's reading: not asked in this round
    silent.single_gets = 0
    assert provider.report(GRAPHS[0], round_views=views) is not None
    assert silent.single_gets == 0


def test_an_agent_of_an_earlier_release_is_asked_per_load_balancer(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, 2)
    provider = provider_over(fleet, tmp_path)
    for g in GRAPHS:
        provider.apply(g, CLAIM)
    older = fleet.fakes["n1"]
    older.lists = False
    older.single_gets = fleet.fakes["n0"].single_gets = 0
    views = provider.node_views()
    assert views.by_node["n1"] is None
    for g in GRAPHS:
        assert provider.report(g, round_views=views) is not None
    assert (fleet.fakes["n0"].single_gets, older.single_gets) == (0, len(GRAPHS))


def test_a_node_new_this_round_is_programmed_from_the_round(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, 2)
    provider = provider_over(fleet, tmp_path)
    provider.apply(GRAPHS[0], CLAIM)
    fleet.fakes["n2"] = type(fleet.fakes["n0"])(tmp_path / "n2")
    views = provider.node_views()
    assert views.by_node["n2"] == {}
    provider.report(GRAPHS[0], round_views=views)
    assert fleet.fakes["n2"].manager.ids() == [GRAPHS[0].id]


class ChosenStates(HealthChecker):
    """A checker whose verdicts the test sets (it is never started)."""

    def __init__(self) -> None:
        super().__init__(NeverProbes(), lambda changes: None)
        self.down: set[str] = set()

    def states(self, group: str) -> dict[str, bool]:
        return {key: False for key in self.down}


def test_a_health_batch_over_several_load_balancers_is_one_transaction(tmp_path: Path) -> None:
    ops = RecordingNftOps()
    checker = ChosenStates()
    manager = L4NodeManager(tmp_path, L4Engine(ops), checker, RecordingVipHolder())
    for version, g in enumerate(GRAPHS, start=1):
        manager.put(g.id, service_spec(g, version))
    ops.loaded.clear()
    sick = [GRAPHS[0].pools[0].members[0].id, GRAPHS[1].pools[0].members[2].id]
    checker.down.update(sick)
    manager.on_health_changes([HealthChange(key, False, 1.0) for key in sick])
    assert len(ops.loaded) == 1
    assert nft.lb_key(GRAPHS[0].id) in ops.loaded[0]
    assert nft.lb_key(GRAPHS[1].id) in ops.loaded[0]
    assert nft.lb_key(GRAPHS[2].id) not in ops.loaded[0]  # untouched
    status = manager.get(GRAPHS[0].id)
    assert status is not None and status.members[sick[0]] == "DOWN"
    # a deleted load balancer's members no longer lead to it
    manager.delete(GRAPHS[1].id)
    ops.loaded.clear()
    manager.on_health_changes([HealthChange(sick[1], True, 2.0)])
    assert ops.loaded == []


def test_a_restarted_node_loads_its_stored_load_balancers_together(tmp_path: Path) -> None:
    first = L4NodeManager(
        tmp_path, L4Engine(RecordingNftOps()), ChosenStates(), RecordingVipHolder()
    )
    for version, g in enumerate(GRAPHS, start=1):
        first.put(g.id, service_spec(g, version))
    ops = RecordingNftOps()
    restarted = L4NodeManager(tmp_path, L4Engine(ops), ChosenStates(), RecordingVipHolder())
    assert restarted.restore() == sorted(g.id for g in GRAPHS)
    assert len(ops.checked) == len(ops.loaded) == 1  # one transaction for all three
    for g in GRAPHS:
        assert f"add chain ip lbaas {nft.chain_name(g.id)}" in ops.loaded[0]
        status = restarted.get(g.id)
        assert status is not None and status.last_error is None
