"""The tier's leases on a coordination engine, with a fake clock (issue 29.2).

A node's ``LeaseKeeper`` and the control plane's ``CoordinatedWatcher`` share the embedded
engine on one fake clock; a renewal's network delay and a loaded node's late renewals are
clock advances. Every event (the node's own withdraw/announce, the watcher's verdicts) goes
into one log, so the tests read their order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lbaas.config import TierSettings
from lbaas.coordination.base import CoordinationUnavailable, LiveLease
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.coordination.keeper import LeaseKeeper
from lbaas.tier.coordinated_leases import CoordinatedLeaseReader, CoordinatedWatcher
from lbaas.tier.host.bird import BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.node_lease import BirdFence, node_keeper
from lbaas.tier.watch_service import TierWatch

POLICY = LeasePolicy(renew_interval=0.125, missed_renewals=4)  # TLB's 500 ms lease
SWEEP = POLICY.renew_interval / 2


@dataclass
class World:
    now: float = 1000.0
    log: list[tuple[float, str]] = field(default_factory=list)
    reachable: dict[str, bool] = field(default_factory=lambda: {"h1": True, "h2": True})
    watcher_reaches: bool = True

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
        if not up:
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


def _setup() -> tuple[World, dict[str, LeaseKeeper], CoordinatedWatcher]:
    world = World()
    engine = EmbeddedCoordinator(world.clock)
    keepers = {
        node: node_keeper(
            Network(engine, world, node),
            node,
            POLICY,
            BirdFence(RecordingBird(world, node), node),
            world.clock,
        )
        for node in ("h1", "h2")
    }

    def noted(verdict: str) -> object:
        return lambda node: world.log.append((world.now, f"watcher {verdict} {node}"))

    watcher = CoordinatedWatcher(
        Network(engine, world, "watcher"), ("h1", "h2"), noted("down"), noted("restored")
    )
    return world, keepers, watcher


def _run(
    world: World,
    keepers: dict[str, LeaseKeeper],
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
