"""A node's status read does not hold its lock while ``nft`` reads the flow counters.

The health manager's poll asks every node about every distributed load balancer, a GET
each; each GET reads the counters with an ``nft`` subprocess. Under the manager's lock
that read held up every PUT (a converge) and health re-apply behind it (issue 34).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lbaas.l4.engine import L4Engine
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.host.recording import RecordingNftOps, RecordingVipHolder
from lbaas.l4node.manager import L4NodeManager
from lbaas.providers.distributed.translate import service_spec
from tests.unit.fleet.test_agent_api_l4 import GRAPH, NeverProbes

WAIT = 30.0  # generous: only a lock held across the read makes the PUT wait this long


class SlowCounters(RecordingNftOps):
    """The next ``list_json`` (the flow counters) after ``arm`` blocks until ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.reading = threading.Event()
        self.release = threading.Event()

    def list_json(self, words: Sequence[str], *, terse: bool = False) -> dict[str, Any] | None:
        if self.armed:
            self.armed = False
            self.reading.set()
            assert self.release.wait(WAIT)
        return super().list_json(words, terse=terse)


def test_a_put_goes_through_while_a_status_read_waits_for_nft(tmp_path: Path) -> None:
    ops = SlowCounters()
    checker = HealthChecker(NeverProbes(), lambda changes: None)
    manager = L4NodeManager(tmp_path / "l4", L4Engine(ops), checker, RecordingVipHolder())
    manager.put(GRAPH.id, service_spec(GRAPH, version=1))
    ops.armed = True
    statuses: list[Any] = []
    reader = threading.Thread(target=lambda: statuses.append(manager.get(GRAPH.id)))
    reader.start()
    try:
        assert ops.reading.wait(WAIT)  # the GET is inside its nft read now
        put = threading.Thread(target=manager.put, args=(GRAPH.id, service_spec(GRAPH, 2)))
        put.start()
        put.join(WAIT)
        assert not put.is_alive(), "the PUT waited for the GET's nft read"
    finally:
        ops.release.set()
        reader.join(WAIT)
    (status,) = statuses
    assert status is not None and status.applied_version == 1  # what it read under the lock
    assert manager.get(GRAPH.id).applied_version == 2  # type: ignore[union-attr]
