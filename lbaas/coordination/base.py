"""What lbaas asks of a coordination engine: named leases with a TTL that a holder renews.

Hosts that share nothing but the network (issue 29) can agree on who is alive and who
leads only through a service they all reach. One primitive covers both needs:

* a *lease* ``name`` is held by one ``holder`` until ``ttl`` seconds after its last
  renewal, counted by the ENGINE's clock (the database's ``now()``, etcd's lease timer),
  never by a node's: nodes' clocks disagree, the engine's is the one every reader shares;
* renewing a lease another holder still holds fails (returns False), so a lease is also a
  lock: the holder of ``leader/<loop>`` is the one process that runs that singleton loop;
* ``live`` lists the leases not yet expired under a prefix, with what is left of each by
  the engine's clock (the tier watcher's view of ``tier/<node>``).

An engine that cannot be reached raises ``CoordinationUnavailable``: a caller must tell
"I could not ask" from "I asked and lost" (a node fences itself either way, a watcher
does not mark every node down because the engine is gone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class CoordinationUnavailable(Exception):
    """The coordination engine could not be asked (down, unreachable, timed out)."""


@dataclass(frozen=True)
class LiveLease:
    name: str
    holder: str
    remaining: float  # seconds until it expires, by the engine's clock


class Coordinator(Protocol):
    """A coordination engine (PostgreSQL, etcd, or the embedded one of ``lbaas serve``)."""

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        """Take or extend lease ``name`` for ``holder`` until ``ttl`` s from now (the
        engine's now); False when another holder holds it unexpired."""
        ...

    def release(self, name: str, holder: str) -> None:
        """End ``holder``'s lease ``name`` now (nothing when it holds none)."""
        ...

    def live(self, prefix: str) -> list[LiveLease]:
        """The unexpired leases whose name starts with ``prefix``."""
        ...

    def close(self) -> None: ...


def check_lease(name: str, holder: str, ttl: float) -> None:
    """ValueError for a lease no engine should be asked for."""
    if not name or not holder:
        raise ValueError("a lease needs a name and a holder")
    if not 0 < ttl <= 3600:
        raise ValueError(f"lease ttl {ttl!r} is not within (0, 3600] seconds")
