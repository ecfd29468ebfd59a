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
the first renewal is granted. A stop (SIGTERM) fences, then releases the lease so the
watcher sees the node leave at once.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from pathlib import Path

from lbaas.config import load_settings
from lbaas.coordination.base import Coordinator
from lbaas.coordination.engines import open_coordinator
from lbaas.coordination.keeper import Clock, KeeperLoop, LeaseKeeper
from lbaas.tier.coordinated_leases import node_lease
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl
from lbaas.tier.lease import LeasePolicy
from lbaas.tier.node_agent import serve_health

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
        log.warning("tier node %s: lease not held, withdrawing its VIPs (fenced)", self._node)
        self._tell("disable")

    def announce(self) -> None:
        log.warning("tier node %s: lease held, announcing its VIPs", self._node)
        self._tell("enable")


def node_keeper(
    coordinator: Coordinator, node: str, policy: LeasePolicy, fence: BirdFence, clock: Clock
) -> LeaseKeeper:
    return LeaseKeeper(
        coordinator, node_lease(node), node, policy.lifetime, clock, fence.announce, fence.withdraw
    )


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    node, address, port = sys.argv[1:4]
    settings = load_settings()
    policy = LeasePolicy.from_settings(settings.tier)
    bird = BirdControl(Path(sys.argv[4])) if len(sys.argv) > 4 else None
    fence = BirdFence(bird, node)
    fence.withdraw()  # nothing announced before the first renewal is granted
    coordinator = open_coordinator(settings.coordination, settings.database_url)
    keeper = node_keeper(coordinator, node, policy, fence, time.monotonic)
    loop = KeeperLoop(keeper, policy.renew_interval)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serve_health(address, int(port))
    loop.start()
    print("ready", flush=True)
    stop.wait()
    loop.stop(release=True)
    coordinator.close()


if __name__ == "__main__":
    main()
