"""The distributed provider without a network: graphs in, specs to every node, views combined.

Each fake node is a real ``L4NodeManager`` over a ``RecordingNftOps`` (so the nft text the
node would load is checked), reached through a fake client; one node can be made
unreachable. The majority rule is tested on hand-made node views.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from lbaas.config import load_settings
from lbaas.db.jobs.job_queue import Claim
from lbaas.errors import AgentUnreachable, Conflict, InvalidInput
from lbaas.health.distributed_poll import DistributedStatusPoller
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.rollup import roll_up
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.base import Prober
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import Target
from lbaas.l4.host.recording import RecordingNftOps, RecordingVipHolder
from lbaas.l4node.manager import L4NodeManager, health_targets
from lbaas.model.enums import (
    HealthMonitorType,
    LbAlgorithm,
    ListenerProtocol,
    OperatingStatus,
    PersistenceType,
    PoolProtocol,
)
from lbaas.model.graph import LoadBalancer
from lbaas.model.health import HealthReport, MemberState
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.base import Binding, HostBindings, Node, NodeDirectory
from lbaas.providers.distributed.combine import combine, member_state
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.providers.distributed.entry import entry_node
from lbaas.providers.distributed.nodes import SettingsNodeDirectory
from lbaas.providers.distributed.translate import service_spec, table_size_for
from lbaas.wire.l4 import L4_SPEC_FORMAT, L4ServiceSpec, L4ServiceStatus
from tests.support.graphs import listener, load_balancer, member, monitor, persistence, pool

MEMBERS = [
    member("a", "10.9.0.1", 8000, weight=2),
    member("b", "10.9.0.2", 8000, monitor_address="10.9.1.2", monitor_port=9000),
]
GRAPH = load_balancer(
    [
        listener("tcp", ListenerProtocol.TCP, 80, default_pool="tcp"),
        listener("udp", ListenerProtocol.UDP, 53, default_pool="udp"),
    ],
    [
        pool(
            "tcp",
            MEMBERS,
            protocol=PoolProtocol.TCP,
            algorithm=LbAlgorithm.MAGLEV,
            hm=monitor("tcp", HealthMonitorType.TCP, delay=2, timeout=1),
        ),
        pool(
            "udp",
            [member("c", "10.9.0.3", 5353), member("d", "10.9.0.4", 5353, admin=False)],
            protocol=PoolProtocol.UDP,
            algorithm=LbAlgorithm.SOURCE_IP_PORT,
            sticky=persistence(PersistenceType.SOURCE_IP),
        ),
    ],  # fmt: skip
    vip_address="10.9.9.9",
)
CLAIM = Claim(GRAPH.id, generation=1, owner="worker-a", attempts=0, rebuild=False)


class NeverProbes(Prober):
    async def probe(self, target: Target) -> bool:
        raise AssertionError("the checker is not started in these tests")


class FakeNode:
    """A node's agent in-process: the real manager, with nft recorded."""

    def __init__(self, root: Path) -> None:
        self.ops = RecordingNftOps()
        checker = HealthChecker(NeverProbes(), lambda changes: None)
        self.vips = RecordingVipHolder()
        self.manager = L4NodeManager(root, L4Engine(self.ops), checker, self.vips)
        self.reachable = True
        self.lists = True  # False: an agent of an earlier release, without GET /v1/l4
        self.single_gets = 0

    def _check(self) -> None:
        if not self.reachable:
            raise AgentUnreachable("node down", 0.1, "fake")

    def put_l4(self, spec: L4ServiceSpec) -> L4ServiceStatus:
        self._check()
        return self.manager.put(spec.loadbalancer_id, spec)

    def get_l4(
        self, lb_id: str, *, placement: bool = False, local: bool = False
    ) -> L4ServiceStatus | None:
        self._check()
        self.single_gets += 1
        return self.manager.get(lb_id, placement=placement, local=local)

    def list_l4(self, *, local: bool = False) -> dict[str, L4ServiceStatus] | None:
        self._check()
        return self.manager.statuses(local=local) if self.lists else None

    def delete_l4(self, lb_id: str) -> None:
        self._check()
        self.manager.delete(lb_id)

    def close(self) -> None:
        pass


class Fleet(NodeDirectory):
    def __init__(self, tmp_path: Path, count: int) -> None:
        self.fakes = {f"n{i}": FakeNode(tmp_path / f"n{i}") for i in range(count)}

    def nodes(self) -> list[Node]:
        return [Node(name, f"https://{name}:9443") for name in self.fakes]

    def client(self, node: Node) -> Any:
        return self.fakes[node.name]


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    return Fleet(tmp_path, 3)


@pytest.fixture
def provider(tmp_path: Path, fleet: Fleet) -> DistributedProvider:
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    return DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)


def test_the_spec_carries_listeners_members_hash_and_monitor() -> None:
    spec = service_spec(GRAPH, version=7)
    tcp, udp = spec.listeners
    assert (spec.vip, spec.version) == ("10.9.9.9", 7)
    assert (tcp.protocol, tcp.port, tcp.hash_key) == ("tcp", 80, "five_tuple")
    assert [(m.address, m.weight) for m in tcp.members] == [("10.9.0.1", 2), ("10.9.0.2", 1)]
    assert tcp.monitor is not None and tcp.monitor.type == "TCP"
    assert (tcp.monitor.delay, tcp.monitor.max_retries, tcp.monitor.max_retries_down) == (2, 2, 3)
    assert (udp.protocol, udp.hash_key, udp.monitor) == ("udp", "source_address", None)
    probed = [(t.key, t.address, t.port) for t in health_targets(spec)]
    assert probed == [(MEMBERS[0].id, "10.9.0.1", 8000), (MEMBERS[1].id, "10.9.1.2", 9000)]
    assert [m.address for m in udp.members] == ["10.9.0.3"]  # d is admin down


def test_tables_are_sized_over_100_slots_per_member_in_a_few_steps() -> None:
    assert [table_size_for(n) for n in (0, 1, 10, 11, 40, 41, 164, 165, 700)] == [
        1021, 1021, 1021, 4099, 4099, 16411, 16411, 65537, 65537,
    ]  # fmt: skip
    assert [listener.table_size for listener in service_spec(GRAPH, 1).listeners] == [1021] * 2


def test_an_algorithm_the_engine_lacks_is_a_400() -> None:
    graph = load_balancer(
        [listener("t", ListenerProtocol.TCP, 80, default_pool="t")],
        [pool("t", MEMBERS, protocol=PoolProtocol.TCP, algorithm=LbAlgorithm.ROUND_ROBIN)],
    )
    with pytest.raises(InvalidInput, match="ROUND_ROBIN"):
        service_spec(graph, 1)


def test_apply_programs_every_node_and_status_rolls_up_online(
    provider: DistributedProvider, fleet: Fleet
) -> None:
    provider.apply(GRAPH, CLAIM)
    for fake in fleet.fakes.values():
        (text,) = fake.ops.loaded
        assert "ip daddr 10.9.9.9 meta l4proto tcp th dport 80" in text
        assert "jhash ip saddr mod" in text  # SOURCE_IP persistence on the UDP listener
        assert "10.9.0.3 . 5353" in text and "10.9.0.4" not in text
    report = provider.status(GRAPH.id)
    assert report is not None
    statuses = roll_up(GRAPH, report)
    assert statuses[MEMBERS[0].id] is OperatingStatus.ONLINE
    assert statuses[GRAPH.pools[1].members[0].id] is OperatingStatus.NO_MONITOR
    provider.delete(GRAPH.id, CLAIM)
    assert all(f.manager.ids() == [] for f in fleet.fakes.values())


def test_an_unreachable_node_fails_the_converge_after_the_others_got_the_spec(
    provider: DistributedProvider, fleet: Fleet
) -> None:
    fleet.fakes["n1"].reachable = False
    with pytest.raises(AgentUnreachable, match="could not be reached") as refused:
        provider.apply(GRAPH, CLAIM)
    assert "['n1']" in (refused.value.operator_message or "")
    assert fleet.fakes["n0"].manager.ids() == [GRAPH.id] == fleet.fakes["n2"].manager.ids()
    report = provider.report(GRAPH)  # the two that answer still report
    assert report is not None and report.pools[GRAPH.pools[0].id].members


def view(**members: str) -> L4ServiceStatus:
    return L4ServiceStatus(loadbalancer_id=GRAPH.id, members=members)  # type: ignore[arg-type]


def test_a_member_is_up_when_a_strict_majority_of_answering_nodes_sees_it_up() -> None:
    assert member_state([view(m="UP"), view(m="UP"), view(m="DOWN")], "m") is MemberState.UP
    assert member_state([view(m="UP"), view(m="DOWN"), view(m="DOWN")], "m") is MemberState.DOWN
    assert member_state([view(m="UP"), view(m="DOWN")], "m") is MemberState.DOWN  # a tie
    assert member_state([view(m="NO_CHECK")] * 2, "m") is MemberState.NO_CHECK
    assert member_state([view(x="UP")], "m") is None


def test_combined_views_roll_up_to_error_and_degraded() -> None:
    a, b = (str(m.id) for m in MEMBERS)
    views = [view(**{a: "DOWN", b: "UP"}), view(**{a: "DOWN", b: "UP"}), view(**{a: "UP", b: "UP"})]
    report = combine(GRAPH, views, answered=3)
    assert report is not None
    statuses = roll_up(GRAPH, report)
    assert statuses[MEMBERS[0].id] is OperatingStatus.ERROR
    assert statuses[MEMBERS[1].id] is OperatingStatus.ONLINE
    assert statuses[GRAPH.pools[0].id] is OperatingStatus.DEGRADED
    assert combine(GRAPH, [], answered=0) is None


def test_nodes_come_from_settings_or_the_local_agent(tmp_path: Path) -> None:
    settings = load_settings(environ={}, overrides={"agent": {"host": "10.1.0.5", "port": 9555}})
    assert SettingsNodeDirectory(settings).nodes() == [
        Node("10.1.0.5:9555", "https://10.1.0.5:9555")
    ]
    listed = load_settings(
        environ={},
        overrides={"providers": {"distributed_nodes": ["https://10.1.0.6:9443/", "https://h2:1"]}},
    )
    assert [n.agent_url for n in SettingsNodeDirectory(listed).nodes()] == [
        "https://10.1.0.6:9443",
        "https://h2:1",
    ]


def test_the_health_manager_poll_writes_the_majority_and_skips_silence() -> None:
    store = InMemoryHealthStore()
    store.put_graph(GRAPH)
    a = str(MEMBERS[0].id)
    views: list[L4ServiceStatus | None] = [view(**{a: "DOWN"}), view(**{a: "DOWN"}), None]
    reports = {"answered": 3}

    def report(graph: LoadBalancer) -> HealthReport | None:
        return combine(graph, views, answered=reports["answered"])

    poller = DistributedStatusPoller(store, lambda: [GRAPH.id, "gone"], lambda: report)
    assert poller.poll_once() == 1
    written = store.statuses(GRAPH.id)
    assert written is not None and written[MEMBERS[0].id] is OperatingStatus.ERROR
    store.set_pending(GRAPH.id)  # a converge in flight: it settles statuses itself
    assert poller.poll_once() == 0
    store.set_pending(GRAPH.id, False)
    reports["answered"] = 0  # no node answered: what is stored stays
    assert poller.poll_once() == 0 and store.statuses(GRAPH.id) is written


def test_a_restarted_node_agent_programs_its_stored_services_again(tmp_path: Path) -> None:
    first = FakeNode(tmp_path / "node")
    first.put_l4(service_spec(GRAPH, version=5))
    restarted = FakeNode(tmp_path / "node")
    assert restarted.manager.restore() == [GRAPH.id]
    assert restarted.ops.loaded == first.ops.loaded  # the same full table
    status = restarted.get_l4(GRAPH.id)
    assert status is not None and status.applied_version == 5
    with pytest.raises(Conflict, match="older"):
        restarted.put_l4(service_spec(GRAPH, version=4))


def test_a_node_new_to_the_fleet_gets_the_load_balancer_at_the_next_status_poll(
    provider: DistributedProvider, fleet: Fleet, tmp_path: Path
) -> None:
    provider.apply(GRAPH, CLAIM)
    fleet.fakes["n9"] = FakeNode(tmp_path / "n9")  # enrolled (or back from DOWN) since
    assert fleet.fakes["n9"].manager.ids() == []
    report = provider.report(GRAPH)
    assert fleet.fakes["n9"].manager.ids() == [GRAPH.id]
    (text,) = fleet.fakes["n9"].ops.loaded
    assert "ip daddr 10.9.9.9 meta l4proto tcp th dport 80" in text
    assert report is not None and report.pools[GRAPH.pools[0].id].members


def test_the_resync_check_finds_what_every_node_holds_at_the_version_sent(
    provider: DistributedProvider, fleet: Fleet, tmp_path: Path
) -> None:
    sent = provider.apply(GRAPH, CLAIM).version
    assert sent is not None
    lists_before = [f.single_gets for f in fleet.fakes.values()]
    assert provider.applied_versions({GRAPH.id: sent, "never-sent": sent}) == {GRAPH.id}
    assert [f.single_gets for f in fleet.fakes.values()] == lists_before  # listings only
    assert provider.applied_versions({GRAPH.id: sent - 1}) == set()  # not what it holds
    fleet.fakes["n2"].manager.delete(GRAPH.id)  # a node that lost it
    assert provider.applied_versions({GRAPH.id: sent}) == set()
    again = provider.apply(GRAPH, CLAIM).version
    assert again is not None and again > sent
    assert provider.applied_versions({GRAPH.id: again}) == {GRAPH.id}
    fleet.fakes["n1"].reachable = False  # a node that does not answer: cannot tell
    assert provider.applied_versions({GRAPH.id: again}) is None
    fleet.fakes["n1"].reachable = True
    fleet.fakes["n0"].lists = False  # nor can an agent of a release that cannot list
    assert provider.applied_versions({GRAPH.id: again}) is None
    fleet.fakes["n0"].lists = True
    fleet.fakes["n9"] = FakeNode(tmp_path / "n9")  # a node new to the fleet holds nothing
    assert provider.applied_versions({GRAPH.id: again}) == set()
    fleet.fakes.clear()  # no node known yet (a registry not hearing its hosts again)
    assert provider.applied_versions({GRAPH.id: again}) is None
    assert provider.applied_versions({}) == set()


#: The translation of GRAPH, pinned. The resync checks a stored version instead of
#: converging (``lbaas.jobs.resync_check``), so a change that makes the code write another
#: spec for the same graph must also ship a migration that sets
#: ``converge_jobs.applied_version`` to NULL, or load balancers made before it would keep
#: their old specs until changed (docs/architecture.md, "A full resync converged").
TRANSLATION_OF_GRAPH = "16166283de60f1b3"


def test_a_changed_translation_is_noticed() -> None:
    text = service_spec(GRAPH, version=1).model_dump_json()
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert digest == TRANSLATION_OF_GRAPH, (
        "the distributed spec of the same graph changed: ship a migration that sets "
        "converge_jobs.applied_version to NULL, then pin the new digest"
    )


def test_the_spec_names_its_format_and_an_unknown_format_is_refused_clearly() -> None:
    spec = service_spec(GRAPH, version=3)
    assert spec.spec_format == 1 == L4_SPEC_FORMAT
    body = json.loads(spec.model_dump_json())
    del body["spec_format"]  # controllers before the field: format 1
    assert L4ServiceSpec.model_validate(body).spec_format == 1
    newer = {**body, "spec_format": 2, "listeners": "a shape this agent does not know"}
    with pytest.raises(ValueError, match="L4 spec format 2 cannot be read by this agent") as e:
        L4ServiceSpec.model_validate(newer)
    assert "reads format 1" in str(e.value) and "listeners" not in str(e.value)


def holders(fleet: Fleet) -> list[str]:
    return [name for name, fake in fleet.fakes.items() if fake.vips.held]


def test_one_node_chosen_per_load_balancer_holds_the_vip_and_masquerades(
    provider: DistributedProvider, fleet: Fleet
) -> None:
    provider.apply(GRAPH, CLAIM)
    [entry] = holders(fleet)
    assert fleet.fakes[entry].vips.held == {"10.9.9.9"}
    assert entry_node(GRAPH.id, fleet.nodes()) == Node(entry, f"https://{entry}:9443")
    for name, fake in fleet.fakes.items():
        masquerades = "add element ip lbaas entry_vips { 10.9.9.9 }" in fake.ops.loaded[-1]
        assert masquerades == (name == entry)
        assert (fake.manager.get(GRAPH.id) or view()).entry == (name == entry)
    del fleet.fakes[entry]  # its host went DOWN: the next poll picks another
    provider.report(GRAPH)
    [moved] = holders(fleet)
    assert moved != entry and fleet.fakes[moved].manager.get(GRAPH.id) is not None
    provider.delete(GRAPH.id, CLAIM)
    assert holders(fleet) == []


def test_entries_spread_over_the_nodes_and_stay_when_another_node_leaves() -> None:
    nodes = [Node(f"n{i}", f"https://10.0.0.{i}:9443") for i in range(4)]
    ids = [f"lb-{i}" for i in range(400)]
    chosen = {lb: entry_node(lb, nodes) for lb in ids}
    counts = Counter(node.name for node in chosen.values() if node is not None)
    assert len(counts) == 4 and min(counts.values()) > 60
    fewer = nodes[1:]
    for lb, node in chosen.items():
        if node != nodes[0]:
            assert entry_node(lb, fewer) == node
    assert entry_node("lb-x", []) is None


def _tcp_graph(numbers: list[int]) -> LoadBalancer:
    return load_balancer(
        [listener("tcp", ListenerProtocol.TCP, 80, default_pool="tcp")],
        [
            pool(
                "tcp",
                [member(f"m{n}", f"10.9.0.{n}", 8000) for n in numbers],
                protocol=PoolProtocol.TCP,
                algorithm=LbAlgorithm.MAGLEV,
            )
        ],  # fmt: skip
        vip_address="10.9.9.9",
    )


def _slot_lines(fake: FakeNode) -> str:
    return fake.ops.loaded[-1]


def _placement(fake: FakeNode) -> tuple[dict[str, str], list[str]]:
    """The node's applied places (member id -> place, where not its id) and tombstones."""
    seen = fake.get_l4(GRAPH.id, placement=True)
    assert seen is not None and seen.placement is not None
    ((_, applied),) = seen.placement.items()
    places = {m.id: m.place for m in applied.members if m.place != m.id}
    return places, [t.place for t in applied.tombstones]


def test_a_removed_member_stays_a_tombstone_on_every_node_even_after_a_restart(
    provider: DistributedProvider, fleet: Fleet, tmp_path: Path
) -> None:
    numbers = list(range(100, 112))
    provider.apply(_tcp_graph(numbers), CLAIM)
    provider.apply(_tcp_graph(numbers[1:]), CLAIM)  # 10.9.0.100 removed
    graves = [_placement(fake)[1] for fake in fleet.fakes.values()]
    assert len(graves[0]) == 1 and all(g == graves[0] for g in graves)  # the same everywhere
    updates = {_slot_lines(fake) for fake in fleet.fakes.values()}
    assert len(updates) == 1  # the same slot update everywhere: only m100's slots moved
    (update,) = updates
    deleted, added = update.split("add element")
    assert deleted.startswith("delete element") and "10.9.0.100 " not in added
    moved = added.count(":")
    # A controller that restarted knows nothing: it reads the places back from the nodes,
    # so a new member takes m100's place and the nodes move only those slots again.
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    fresh = DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)
    fresh.apply(_tcp_graph([*numbers[1:], 200]), CLAIM)
    for fake in fleet.fakes.values():
        places, graves_now = _placement(fake)
        assert graves_now == [] and len(places) == 1
        again = _slot_lines(fake).split("add element")[1]
        assert again.count(":") == moved == again.count("10.9.0.200 ")  # m100's slots
    # A node that joins later gets the same places from the poll's catch-up.
    fleet.fakes["n9"] = FakeNode(tmp_path / "n9")
    fresh.report(_tcp_graph([*numbers[1:], 200]))
    assert _placement(fleet.fakes["n9"]) == _placement(fleet.fakes["n0"])


def test_a_worker_whose_memory_is_stale_reads_the_newer_placement_from_a_node(
    provider: DistributedProvider, fleet: Fleet, tmp_path: Path
) -> None:
    numbers = list(range(100, 112))
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    other = DistributedProvider(ProviderContext(settings), directory=fleet, clients=fleet.client)
    provider.apply(_tcp_graph(numbers), CLAIM)
    other.apply(_tcp_graph(numbers[1:]), CLAIM)  # the other worker removes m100
    removal = _slot_lines(fleet.fakes["n0"]).split("add element")[1].count(":")
    # This worker still remembers 12 members; the nodes' newer spec says m100 is a
    # tombstone, so the newcomer takes its place and only those slots move again.
    provider.apply(_tcp_graph([*numbers[1:], 200]), CLAIM)
    for fake in fleet.fakes.values():
        places, graves = _placement(fake)
        assert graves == [] and len(places) == 1
        again = _slot_lines(fake).split("add element")[1]
        assert again.count(":") == removal == again.count("10.9.0.200 ")


def test_a_status_poll_racing_a_delete_leaves_no_node_programmed(
    provider: DistributedProvider, fleet: Fleet
) -> None:
    """The poll loaded the graph while the load balancer was ACTIVE; the delete converge
    cleared the nodes before the poll asked them. Seeing the load balancer missing, the
    poll must not program it back (the entry node would hold the VIP for good)."""
    provider.apply(GRAPH, CLAIM)
    provider.delete(GRAPH.id, CLAIM)  # the worker's delete lands first
    provider.report(GRAPH, lambda _lb_id: False)  # the database: PENDING_DELETE by now
    assert all(fake.manager.ids() == [] for fake in fleet.fakes.values())
    assert holders(fleet) == []


def test_a_delete_landing_while_the_poll_reprograms_a_node_is_undone_there(
    provider: DistributedProvider, fleet: Fleet
) -> None:
    """The delete is requested after the poll's check and lands before its program call
    returns: the check after the call sees it and removes what the call put back."""
    provider.apply(GRAPH, CLAIM)
    provider.delete(GRAPH.id, CLAIM)
    answers = iter([True])  # kept before the call, deleted after it
    provider.report(GRAPH, lambda _lb_id: next(answers, False))
    assert all(fake.manager.ids() == [] for fake in fleet.fakes.values())
    assert holders(fleet) == []


class FakeBindings(HostBindings):
    """Ports bound to hosts, by address, as the Networking API would have recorded them."""

    def __init__(self, ports: dict[str, list[Binding]]) -> None:
        self.ports = ports

    def bindings(self, addresses: Collection[str]) -> dict[str, list[Binding]]:
        return {a: self.ports[a] for a in addresses if a in self.ports}


class HostFleet(Fleet):
    """The fleet's hosts (enrolled agents): each node is a host of the same name."""

    def nodes(self) -> list[Node]:
        return [Node(name, f"https://{name}:9443", host_id=name) for name in self.fakes]


def tcp_targets(fake: FakeNode) -> set[str]:
    """The member addresses the TCP listener's slots map to in the node's last table."""
    return set(re.findall(r": (10\.9\.0\.\d+) \. 8000", fake.ops.loaded[-1]))


def test_prefer_local_members_gives_each_node_the_members_on_its_own_host(
    tmp_path: Path,
) -> None:
    fleet = HostFleet(tmp_path, 3)
    on_n0 = dataclasses.replace(MEMBERS[0], subnet_id="s1")
    elsewhere = dataclasses.replace(MEMBERS[1], subnet_id="s1")
    bindings = FakeBindings({
        on_n0.address: [Binding("s1", "n0")],
        elsewhere.address: [Binding("s2", "n1")],  # the same address on another subnet
    })  # fmt: skip
    tcp_pool = dataclasses.replace(GRAPH.pools[0], members=(on_n0, elsewhere))
    graph = dataclasses.replace(GRAPH, pools=(tcp_pool, GRAPH.pools[1]))
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    provider = DistributedProvider(
        ProviderContext(settings), directory=fleet, clients=fleet.client, bindings=bindings
    )
    provider.apply(graph, CLAIM)  # the flavor does not ask: every node balances both
    assert [tcp_targets(f) for f in fleet.fakes.values()] == [{"10.9.0.1", "10.9.0.2"}] * 3
    preferring = dataclasses.replace(graph, flavor={"prefer_local_members": True})
    provider.apply(preferring, CLAIM)
    n0, n1, n2 = fleet.fakes.values()
    assert tcp_targets(n0) == {"10.9.0.1"}
    assert tcp_targets(n1) == tcp_targets(n2) == {"10.9.0.1", "10.9.0.2"}
    # A node the poll programs again (here: its agent lost everything) gets the same.
    n0.manager.delete(graph.id)
    assert provider.report(preferring) is not None
    assert tcp_targets(n0) == {"10.9.0.1"}


def test_a_node_listed_by_url_is_no_host_and_has_no_local_members(
    provider: DistributedProvider, fleet: Fleet
) -> None:
    bindings = FakeBindings({MEMBERS[0].address: [Binding("s1", "n0")]})
    listed = DistributedProvider(
        provider.context, directory=fleet, clients=fleet.client, bindings=bindings
    )
    listed.apply(dataclasses.replace(GRAPH, flavor={"prefer_local_members": True}), CLAIM)
    assert all(tcp_targets(f) == {"10.9.0.1", "10.9.0.2"} for f in fleet.fakes.values())


def tcp_table(fake: FakeNode) -> set[str]:
    """The member addresses the TCP listener's slots map to now: the node's last full
    load with the slot updates after it replayed over it."""
    slots: dict[str, str] = {}
    for text in fake.ops.loaded:
        if not text.startswith("delete element"):
            slots = {}  # a full load replaces the table
        slots.update(re.findall(r"(\d+) : (10\.9\.0\.\d+) \. 8000", text))
    return set(slots.values())


def _local_provider(tmp_path: Path, bindings: HostBindings) -> tuple[DistributedProvider, Fleet]:
    fleet = HostFleet(tmp_path, 3)
    settings = load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    provider = DistributedProvider(
        ProviderContext(settings), directory=fleet, clients=fleet.client, bindings=bindings
    )
    return provider, fleet


def test_a_port_bound_or_moved_after_the_converge_queues_a_converge_at_the_next_poll(
    tmp_path: Path,
) -> None:
    bindings = FakeBindings({})
    provider, fleet = _local_provider(tmp_path, bindings)
    graph = dataclasses.replace(GRAPH, flavor={"prefer_local_members": True})
    provider.apply(graph, CLAIM)  # no port is bound yet: every node balances both
    n0, n1, n2 = fleet.fakes.values()
    asked: list[str] = []
    assert provider.report(graph, reconverge=asked.append) is not None
    assert asked == []  # nothing moved

    bindings.ports[MEMBERS[0].address] = [Binding("s1", "n0")]  # the instance's port is bound
    loads = [len(f.ops.loaded) for f in (n0, n1, n2)]
    assert provider.report(graph, reconverge=asked.append) is not None
    assert asked == [graph.id]  # once, however many nodes moved
    # The poll programs nothing itself: its graph may be one read old.
    assert [len(f.ops.loaded) for f in (n0, n1, n2)] == loads
    provider.apply(graph, CLAIM)  # the converge it asked for
    assert tcp_table(n0) == {"10.9.0.1"}
    assert tcp_table(n1) == tcp_table(n2) == {"10.9.0.1", "10.9.0.2"}
    assert provider.report(graph, reconverge=asked.append) is not None
    assert asked == [graph.id]  # settled: not asked again

    bindings.ports[MEMBERS[0].address] = [Binding("s1", "n2")]  # the instance migrated
    assert provider.report(graph, reconverge=asked.append) is not None
    assert asked == [graph.id] * 2
    provider.apply(graph, CLAIM)
    assert tcp_table(n2) == {"10.9.0.1"}
    assert tcp_table(n0) == {"10.9.0.1", "10.9.0.2"}  # n0 no longer keeps its flows home


def test_a_poll_with_a_graph_older_than_the_nodes_asks_for_nothing(tmp_path: Path) -> None:
    """The poll's graph may be one read old: a member the nodes carry, bound to n0, that
    the poll's graph does not have yet is no moved port (the bug of 2026-11-27)."""
    newcomer = member("e", "10.9.0.5", 8000)
    bindings = FakeBindings({newcomer.address: [Binding("s1", "n0")]})
    provider, fleet = _local_provider(tmp_path, bindings)
    old = dataclasses.replace(GRAPH, flavor={"prefer_local_members": True})
    tcp_pool = dataclasses.replace(old.pools[0], members=(*MEMBERS, newcomer))
    new = dataclasses.replace(old, pools=(tcp_pool, old.pools[1]))
    provider.apply(new, CLAIM)
    n0 = fleet.fakes["n0"]
    assert tcp_table(n0) == {"10.9.0.5"}
    loads = len(n0.ops.loaded)
    asked: list[str] = []
    assert provider.report(old, reconverge=asked.append) is not None
    assert provider.report(new, reconverge=asked.append) is not None
    assert asked == [] and len(n0.ops.loaded) == loads


def test_an_agent_leaves_out_what_it_was_not_asked_so_older_controllers_read_it(
    tmp_path: Path,
) -> None:
    node = FakeNode(tmp_path)
    status = node.put_l4(service_spec(GRAPH, version=3))
    assert status.local_members is None and status.placement is None
    asked = node.get_l4(GRAPH.id, local=True)
    assert asked is not None and asked.local_members == ()
