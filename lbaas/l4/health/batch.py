"""State changes handed on in batches: when ``max_count`` are waiting, or ``max_delay``
seconds after the first of them, whichever comes first.

A node that loses a rack of members would otherwise reprogram its tables once per member;
batching turns that into one table update, at the cost of at most ``max_delay`` seconds
before a change reaches the kernel. A member that changes twice inside one batch is
reported once, with its latest state.
"""

from __future__ import annotations

from lbaas.l4.health.monitor import HealthChange


class ChangeBatcher:
    def __init__(self, max_count: int = 64, max_delay: float = 0.2) -> None:
        if max_count < 1 or max_delay < 0:
            raise ValueError("a batch needs max_count >= 1 and max_delay >= 0")
        self.max_count = max_count
        self.max_delay = max_delay
        self._pending: dict[str, HealthChange] = {}
        self._since: float | None = None

    def add(self, change: HealthChange) -> None:
        if self._since is None:
            self._since = change.at
        self._pending.pop(change.key, None)  # keep insertion order of the latest state
        self._pending[change.key] = change

    def deadline(self) -> float | None:
        """When the waiting changes are due at the latest (None: nothing waits)."""
        return None if self._since is None else self._since + self.max_delay

    def take(self, now: float) -> list[HealthChange]:
        """The waiting changes if a batch is due at ``now`` (else nothing), oldest first."""
        deadline = self.deadline()
        if deadline is None:
            return []
        if len(self._pending) < self.max_count and now < deadline:
            return []
        batch = list(self._pending.values())
        self._pending.clear()
        self._since = None
        return batch
