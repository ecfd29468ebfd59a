"""Which probe is due when, and what the results change: the checker without its I/O.

Targets come in groups (one per load balancer, say) so that one owner can replace its own
targets without touching the others'. A target keeps its state while its key, address,
port and monitor stay the same; any other change starts it afresh. Each target is probed
every ``delay`` seconds (counted from the start of the previous probe, or from its end if
it took longer), never twice at once; a new target's first probe is staggered by up to
one second (a fraction of the delay, from its key) so that a thousand members added
together do not all open their sockets in the same instant.

Every method takes the time explicitly, so tests drive it with a fake clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from lbaas.l4.health.batch import ChangeBatcher
from lbaas.l4.health.monitor import HealthChange, MemberState, Target

MAX_STAGGER = 1.0


def stagger(key: str, delay: float) -> float:
    """A stable offset in [0, min(delay, MAX_STAGGER)) for a new target's first probe."""
    fraction = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest()) / 2**32
    return fraction * min(delay, MAX_STAGGER)


@dataclass
class _Tracked:
    target: Target
    group: str
    due: float
    state: MemberState = field(default_factory=MemberState)
    started: float | None = None  # set while a probe is in flight


class CheckSchedule:
    def __init__(self, batcher: ChangeBatcher) -> None:
        self._batcher = batcher
        self._tracked: dict[str, _Tracked] = {}

    def set_group(self, group: str, targets: Iterable[Target], now: float) -> None:
        """Make ``group``'s targets exactly ``targets`` (keys unique across groups)."""
        wanted = {target.key: target for target in targets}
        for key in [k for k, t in self._tracked.items() if t.group == group and k not in wanted]:
            del self._tracked[key]
        for key, target in wanted.items():
            known = self._tracked.get(key)
            if known is not None and known.target == target and known.group == group:
                continue
            self._tracked[key] = _Tracked(target, group, now + stagger(key, target.monitor.delay))

    def due(self, now: float) -> list[Target]:
        """The targets to probe now; each is in flight until its ``record``."""
        ready = [t for t in self._tracked.values() if t.started is None and t.due <= now]
        for tracked in ready:
            tracked.started = now
        return [tracked.target for tracked in ready]

    def record(self, target: Target, ok: bool, now: float) -> None:
        """One probe's result; a target replaced or dropped meanwhile is ignored."""
        tracked = self._tracked.get(target.key)
        if tracked is None or tracked.target != target or tracked.started is None:
            return
        tracked.due = max(tracked.started + target.monitor.delay, now)
        tracked.started = None
        if tracked.state.record(ok, target.monitor):
            self._batcher.add(HealthChange(target.key, tracked.state.healthy, now))

    def take_batch(self, now: float) -> list[HealthChange]:
        return self._batcher.take(now)

    def next_wakeup(self) -> float | None:
        """The earliest time something is due: a probe not in flight, or a batch."""
        times = [t.due for t in self._tracked.values() if t.started is None]
        deadline = self._batcher.deadline()
        if deadline is not None:
            times.append(deadline)
        return min(times, default=None)

    def healthy(self, key: str) -> bool | None:
        """The target's current state (None: not tracked)."""
        tracked = self._tracked.get(key)
        return None if tracked is None else tracked.state.healthy

    def states(self, group: str) -> dict[str, bool]:
        return {k: t.state.healthy for k, t in self._tracked.items() if t.group == group}
