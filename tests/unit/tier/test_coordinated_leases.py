"""The tier's leases on a coordination engine, with a fake clock (issue 29.2).

A node's ``LeaseKeeper`` and the control plane's ``CoordinatedWatcher`` share the embedded
engine on one fake clock; a renewal's network delay and a loaded node's late renewals are
clock advances. Every event (the node's own withdraw/announce, the watcher's verdicts) goes
into one log, so the tests read their order. Each node's fence is witnessed by the other
node (``peer_witness``): a node cut off reaches neither the engine nor its peer; an engine
outage leaves the nodes reaching each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lbaas.config import TierSettings
from lbaas.coordination.base import CoordinationUnavailable, LiveLease
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.tier.coordinated_leases import CoordinatedLeaseReader, CoordinatedWatcher
from lbaas.tier.host.bird import BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.node_lease import BirdFence, node_keeper
from lbaas.tier.peer_witness import PeerVerdict, PeerWitness, WitnessedFence
from lbaas.tier.watch_service import TierWatch

POLICY = LeasePolicy(renew_interval=0.125, missed_renewals=4)  # TLB's 500 ms lease
SWEEP = POLICY.renew_interval / 2
NODES = ("h1", "h2", "h3")


@dataclass
class World:
    now: float = 1000.0
    log: list[tuple[float, str]] = field(default_factory=list)
    reachable: dict[str, bool] = field(default_factory=lambda: {"h1": True, "h2": True, "h3": True})
    watcher_reaches: bool = True
    engine_up: bool = True

    def answers(self, asking: str, peer: str) -> bool:
        """Whether ``peer``'s health port answers ``asking`` (both on the network)."""
        return self.reachable[asking] and self.reachable[peer]

    def clock(self) -> float:
        return self.now


class RecordingBird(BirdControl):
    def __init__(self, world: World, node: str) -> None:
        super().__init__(Path("/nonexistent/bird.ctl"))
        self.world, self.node = world, node

    def command(self, *words: str) -> str:
        self.world.log.append((self.world.now, f"{self.node} bird {' '.join(words)}"))
        return "0000 \n"


@dataclass
class Network:
    """The engine as a node or the watcher reaches it: cut off, it raises."""

    engine: EmbeddedCoordinator
    world: World
    party: str

    def _check(self) -> None:
        up = (
            self.world.watcher_reaches
            if self.party == "watcher"
            else self.world.reachable[self.party]
        )
        if not (up and self.world.engine_up):
            raise CoordinationUnavailable(f"{self.party} cut off")

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        self._check()
        return self.engine.renew(name, holder, ttl)

    def release(self, name: str, holder: str) -> None:
        self._check()
        self.engine.release(name, holder)

    def live(self, prefix: str) -> list[LiveLease]:
        self._check()
        return self.engine.live(prefix)

    def close(self) -> None:
        pass


class Node:
    """One tier node: its keeper, and the fence its peer witnesses."""

    def __init__(self, world: World, engine: EmbeddedCoordinator, node: str) -> None:
        peers = {peer: (peer, 0) for peer in NODES if peer != node}
        witness = PeerWitness(
            peers, lambda host, _port, _t: world.answers(node, host), 0.1, world.clock
        )
        self.fence = WitnessedFence(
            BirdFence(RecordingBird(world, node), node),
            witness,
            lambda: self.keeper.engine_answered,
            lambda: self.keeper.remaining(),
            POLICY.lifetime,
            POLICY.renew_interval,
        )
        self.keeper = node_keeper(
            Network(engine, world, node), node, POLICY, self.fence, world.clock
        )

    def attempt(self) -> None:
        self.keeper.attempt()
        self.fence.tick()

    def check(self) -> None:
        self.keeper.check()


def _setup() -> tuple[World, dict[str, Node], CoordinatedWatcher]:
    world = World()
    engine = EmbeddedCoordinator(world.clock)
    keepers = {node: Node(world, engine, node) for node in NODES}

    def noted(verdict: str) -> object:
        return lambda node: world.log.append((world.now, f"watcher {verdict} {node}"))

    watcher = CoordinatedWatcher(
        Network(engine, world, "watcher"), NODES, noted("down"), noted("restored")
    )
    return world, keepers, watcher


def _run(
    world: World,
    keepers: dict[str, Node],
    watcher: CoordinatedWatcher,
    seconds: float,
    late: dict[str, float] | None = None,
) -> None:
    """Advance in sweep steps: each node renews every interval (``late`` adds its delay),
    the keepers check, the watcher sweeps."""
    late = late or {}
    next_renewal = {node: world.now for node in keepers}
    end = world.now + seconds
    while world.now < end:
        for node, keeper in keepers.items():
            if world.now >= next_renewal[node]:
                keeper.attempt()
                next_renewal[node] = world.now + POLICY.renew_interval + late.get(node, 0.0)
            keeper.check()
        watcher.sweep()
        world.now = round(world.now + SWEEP / 4, 6)


def test_a_partitioned_node_withdraws_by_itself_before_the_watcher_marks_it_down() -> None:
    world, keepers, watcher = _setup()
    _run(world, keepers, watcher, 1.0)
    assert not watcher.is_down("h1") and not watcher.is_down("h2")
    world.log.clear()
    world.reachable["h2"] = False
    cut = world.now
    _run(world, keepers, watcher, 2.0)
    events = [event for _, event in world.log]
    assert events == ["h2 bird disable vips", "watcher down h2"]
    fenced_at, marked_at = (at for at, _ in world.log)
    # Both within one lease of the cut (its last granted renewal came before the cut),
    # the node first: never a moment the watcher has it down while it announces.
    assert cut < fenced_at <= marked_at <= cut + POLICY.lifetime + SWEEP
    assert watcher.is_down("h2") and not watcher.is_down("h1")


def test_a_loaded_node_renewing_late_within_its_lease_is_never_marked_down() -> None:
    world, keepers, watcher = _setup()
    _run(world, keepers, watcher, 0.5)
    world.log.clear()
    # h2's renewals come up to 0.3 s late (a busy loop), still inside the 0.5 s lease.
    for delay in (0.1, 0.3, 0.2, 0.25, 0.3):
        _run(world, keepers, watcher, 0.5, late={"h2": delay})
    assert world.log == []
    assert not watcher.is_down("h2")


def test_an_engine_the_watcher_cannot_reach_marks_nothing_down() -> None:
    world, keepers, watcher = _setup()
    _run(world, keepers, watcher, 0.5)
    world.log.clear()
    world.watcher_reaches = False
    world.reachable["h1"] = False  # h1 fences itself, but the watcher cannot know
    _run(world, keepers, watcher, 2.0)
    assert [event for _, event in world.log] == ["h1 bird disable vips"]
    assert not watcher.is_down("h1")
    world.watcher_reaches = True
    _run(world, keepers, watcher, 0.2)
    assert watcher.is_down("h1")


def test_an_engine_outage_withdraws_no_node_that_still_reaches_the_tier() -> None:
    world, keepers, watcher = _setup()
    _run(world, keepers, watcher, 0.5)
    world.log.clear()
    world.engine_up = False  # every etcd member gone: no lease renews, no lease is read
    _run(world, keepers, watcher, 2.0)
    assert world.log == []  # both announce on, and the watcher marks nothing down
    assert all(node.fence.announcing for node in keepers.values())
    # Cut off besides, h2 no longer reaches its peers either: now it fences (h1 and h3,
    # two of three, still answer each other and announce on).
    world.reachable["h2"] = False
    cut = world.now
    _run(world, keepers, watcher, 1.0)
    assert [event for _, event in world.log] == ["h2 bird disable vips"]
    assert world.log[0][0] <= cut + 3 * POLICY.renew_interval
    # The engine back: h1 renews on; h2, back on the network, is held and announces again.
    world.engine_up = world.reachable["h2"] = True
    _run(world, keepers, watcher, 0.5)
    assert [event for _, event in world.log][1:] == ["h2 bird enable vips"]
    assert not any(watcher.is_down(node) for node in NODES)


def test_an_engine_that_answers_and_refuses_fences_whatever_the_peers_say() -> None:
    world, keepers, watcher = _setup()
    _run(world, keepers, watcher, 0.5)
    world.log.clear()
    engine = keepers["h1"].keeper.coordinator
    assert isinstance(engine, Network)
    engine.engine.release("tier/h1", "h1")
    assert engine.engine.renew("tier/h1", "impostor", 5.0)  # the name taken by another
    _run(world, keepers, watcher, 1.0)
    assert "h1 bird disable vips" in [event for _, event in world.log]
    assert not keepers["h1"].fence.announcing and keepers["h2"].fence.announcing


def test_the_majority_counts_the_node_itself() -> None:
    assert PeerVerdict(0.0, answered=1, peers=1).majority  # 2 of a tier of 2
    assert not PeerVerdict(0.0, answered=0, peers=1).majority  # 1 of 2 is not more than half
    assert PeerVerdict(0.0, answered=1, peers=2).majority  # 2 of 3
    assert not PeerVerdict(0.0, answered=1, peers=3).majority  # 2 of 4
    # No peers to ask (tier.nodes unset): nothing tells an outage from isolation, so it fences.
    assert not PeerVerdict(0.0, answered=0, peers=0).majority


def test_a_node_that_renews_again_is_restored_and_announces_again() -> None:
    world, keepers, watcher = _setup()
    _run(world, keepers, watcher, 0.5)
    world.reachable["h1"] = False
    _run(world, keepers, watcher, 1.0)
    world.reachable["h1"] = True
    _run(world, keepers, watcher, 0.5)
    h1 = [event for _, event in world.log if "h1" in event]
    assert h1 == [
        "h1 bird enable vips",
        "h1 bird disable vips",
        "watcher down h1",
        "h1 bird enable vips",
        "watcher restored h1",
    ]
    assert not watcher.is_down("h1")


class FakeRouter(BirdControl):
    def __init__(self) -> None:
        super().__init__(Path("/nonexistent/bird.ctl"))
        self.commands: list[tuple[str, ...]] = []

    def command(self, *words: str) -> str:
        self.commands.append(words)
        return "0000 \n"

    def bgp_sessions(self) -> dict[str, str]:
        return {"h1": "up Established", "h2": "up Established"}

    def prefixes(self, protocol: str) -> list[str]:
        return []


def test_tier_watch_on_an_engine_disables_the_router_session_of_a_node_gone() -> None:
    world = World()
    engine = EmbeddedCoordinator(world.clock)
    settings = TierSettings(
        nodes={"h1": "127.0.0.1:1", "h2": "127.0.0.1:2"},
        router_bird_socket="/nonexistent/bird.ctl",
        lease_renew_interval=0.125,
        lease_missed_renewals=4,
    )
    router = FakeRouter()
    watch = TierWatch(settings, router=router, coordinator=engine)
    assert engine.renew("tier/h1", "h1", 0.5) and engine.renew("tier/h2", "h2", 0.5)
    watch.sweep()
    assert router.commands == [("enable", "h1"), ("enable", "h2")]
    world.now += 0.4
    assert engine.renew("tier/h1", "h1", 0.5)
    world.now += 0.2  # h2's lease is over
    watch.sweep()
    assert router.commands[2:] == [("disable", "h2")]
    status = watch.status()
    assert status["nodes"]["h2"]["down"] is True and status["nodes"]["h2"]["lease"] is None
    assert status["nodes"]["h1"]["lease"]["held"] is True
    assert CoordinatedLeaseReader(engine, 0.5).read().keys() == {"h1"}
