"""A tier node's lease on the coordination engine, and its self-fencing (issue 29.2).

    python -m lbaas.tier.node_lease NODE HEALTH_ADDRESS HEALTH_PORT [BIRD_SOCKET]

The process holds the lease ``tier/NODE`` on the engine of ``[coordination]`` (every
``tier.lease_renew_interval`` s, TTL ``LeasePolicy.lifetime``) and answers on its health
port, as ``lbaas.tier.node_agent`` does with the SQLite file. With the node's BIRD control
socket it also fences the node BY ITSELF: the moment its lease may be gone by its own
clock (``LeaseKeeper``: TTL after it sent its last granted renewal, so before the engine
lets it expire) it disables BIRD's ``vips`` protocol, which withdraws every VIP route the
node announces (the static ones and the lbaas agent's routes file, both in that protocol);
the next granted renewal enables it again. It starts fenced: nothing is announced before
the first renewal is granted. One exception (``peer_witness``): while the engine does not
answer at all and a majority of the tier (``tier.nodes``, the other nodes' health ports)
does, a lapsed lease is the engine's outage, not this node's isolation, and it announces on. A stop (SIGTERM) fences, then releases the lease so the
watcher sees the node leave at once.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from pathlib import Path

from lbaas.config import TierSettings, load_settings
from lbaas.coordination.base import Coordinator
from lbaas.coordination.engines import open_coordinator
from lbaas.coordination.keeper import Clock, KeeperLoop, LeaseKeeper
from lbaas.tier.coordinated_leases import node_lease
from lbaas.tier.health_port import connects, split_endpoint
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.node_agent import serve_health
from lbaas.tier.peer_witness import PeerWitness, WitnessedFence

log = logging.getLogger(__name__)

#: The node BIRD's protocol holding its VIP routes (``lbaas.tier.bird.render_node``).
VIPS_PROTOCOL = "vips"


class BirdFence:
    """Withdraw or announce the node's VIPs through its BIRD; nothing without one."""

    def __init__(self, control: BirdControl | None, node: str) -> None:
        self._control = control
        self._node = node

    def _tell(self, word: str) -> None:
        if self._control is None:
            return
        try:
            self._control.command(word, VIPS_PROTOCOL)
        except BirdCommandFailed as exc:
            log.error(
                "tier node %s: BIRD not told to %s %s: %s", self._node, word, VIPS_PROTOCOL, exc
            )

    def withdraw(self) -> None:
        log.warning("tier node %s: withdrawing its VIPs (fenced)", self._node)
        self._tell("disable")

    def announce(self) -> None:
        log.warning("tier node %s: announcing its VIPs", self._node)
        self._tell("enable")


def node_keeper(
    coordinator: Coordinator, node: str, policy: LeasePolicy, fence: WitnessedFence, clock: Clock
) -> LeaseKeeper:
    return LeaseKeeper(
        coordinator, node_lease(node), node, policy.lifetime, clock, fence.held, fence.lost
    )


def peers(tier: TierSettings, node: str) -> dict[str, tuple[str, int]]:
    """The other tier nodes' health ports (``tier.nodes``, the watcher's map too)."""
    return {name: split_endpoint(endpoint) for name, endpoint in tier.nodes.items() if name != node}


def witness_forever(fence: WitnessedFence, interval: float, stop: threading.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        fence.tick()
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    node, address, port = sys.argv[1:4]
    settings = load_settings()
    policy = LeasePolicy.from_settings(settings.tier)
    bird = BirdControl(Path(sys.argv[4])) if len(sys.argv) > 4 else None
    bird_fence = BirdFence(bird, node)
    bird_fence.withdraw()  # nothing announced before the first renewal is granted
    coordinator = open_coordinator(settings.coordination, settings.database_url)
    # A peer is asked for at most one interval, so a verdict is never older than two.
    timeout = min(settings.tier.health_check_timeout, policy.renew_interval)
    witness = PeerWitness(peers(settings.tier, node), connects, timeout, time.monotonic)
    keeper: LeaseKeeper | None = None
    fence = WitnessedFence(
        bird_fence,
        witness,
        lambda: keeper is None or keeper.engine_answered,
        lambda: policy.lifetime if keeper is None else keeper.remaining(),
        policy.lifetime,
        policy.renew_interval,
    )
    keeper = node_keeper(coordinator, node, policy, fence, time.monotonic)
    loop = KeeperLoop(keeper, policy.renew_interval)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serve_health(address, int(port))
    loop.start()
    threading.Thread(
        target=witness_forever,
        args=(fence, policy.renew_interval, stop),
        name="tier-witness",
        daemon=True,
    ).start()
    print("ready", flush=True)
    stop.wait()
    loop.stop(release=True)
    coordinator.close()


if __name__ == "__main__":
    main()
