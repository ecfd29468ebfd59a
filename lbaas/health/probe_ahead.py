"""Data-plane probes started before an amphora's silence is long enough to fail it over.

A silent amphora is probed on its VIP before it is failed over (``lbaas.health.probe``).
On a lost host nothing answers, so that probe spends its whole ``health.probe_timeout``
after the silence reached ``stale_after``, and the failover waits for it: a lost host's
SINGLE load balancers served again a timeout later than the detection allowed (issue 29).
So the sweeper starts the probe of an amphora once its silence reaches ``stale_after``
minus the probe's timeout; by the time the amphora is stale the verdict is in. A probe
started that way covers the last stretch of the silence, which is the evidence the probe
at ``stale_after`` would have given, a timeout earlier. An amphora heard again loses its
probe; each verdict is used once, for the sweep that finds the amphora stale, and later
sweeps probe again as they always did.

A probe is any check returning a verdict: the VIP probe of a SINGLE amphora, or the
own-address probe of a pair's amphora (``lbaas.health.pair_probe``); the pool is shared.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor

from lbaas.model.graph import AmphoraId

Check = Callable[[], bool]
"""One probe of one amphora: True only on evidence that it serves."""


class ProbesAhead:
    """The probes in flight or done, per amphora, on a pool of at most ``workers``
    threads shared with the sweeps' own probes."""

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="vip-probe")
        self._started: dict[AmphoraId, Future[bool]] = {}
        self._lock = threading.Lock()

    def start(self, amphora_id: AmphoraId, check: Check) -> None:
        """Run ``check`` for ``amphora_id`` now, unless one is under way."""
        with self._lock:
            if amphora_id not in self._started:
                self._started[amphora_id] = self._pool.submit(check)

    def started(self) -> frozenset[AmphoraId]:
        with self._lock:
            return frozenset(self._started)

    def keep_only(self, suspects: Collection[AmphoraId]) -> None:
        """Forget the probes of amphorae no longer suspect (heard again, or gone)."""
        with self._lock:
            for amphora_id in set(self._started) - set(suspects):
                del self._started[amphora_id]

    def verdict(self, amphora_id: AmphoraId, check: Check) -> Future[bool]:
        """The probe started ahead for ``amphora_id`` (taken: used once), or ``check`` now."""
        with self._lock:
            ahead = self._started.pop(amphora_id, None)
        return ahead if ahead is not None else self._pool.submit(check)

    def close(self) -> None:
        """Stop taking probes; those running end within their timeout on their own."""
        self._pool.shutdown(wait=False, cancel_futures=True)
