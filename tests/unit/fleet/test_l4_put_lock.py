"""A PUT reads its load balancer's flow counters outside the node's lock.

The counters come from a listing of the whole dispatch map (an ``nft`` subprocess whose
cost grows with the load balancers); read under the lock, every PUT held up the other
converges' GETs and PUTs for that long (bench/scale.py at a few thousand load balancers).
Here the listing of the second PUT is held at a gate while another caller needs the lock.
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


class GatedListing(RecordingNftOps):
    """``list_json`` of the dispatch map waits at ``release`` once ``armed``."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.listing = threading.Event()
        self.release = threading.Event()

    def list_json(self, words: Sequence[str], *, terse: bool = False) -> dict[str, Any] | None:
        if self.armed and "dispatch" in words:
            self.listing.set()
            assert self.release.wait(10), "never released"
        return super().list_json(words, terse=terse)


def test_a_put_does_not_hold_the_lock_while_it_lists_the_counters(tmp_path: Path) -> None:
    ops = GatedListing()
    checker = HealthChecker(NeverProbes(), lambda changes: None)
    manager = L4NodeManager(tmp_path / "l4", L4Engine(ops), checker, RecordingVipHolder())
    manager.put(GRAPH.id, service_spec(GRAPH, version=1))
    ops.armed = True
    answers: list[Any] = []
    put = threading.Thread(
        target=lambda: answers.append(manager.put(GRAPH.id, service_spec(GRAPH, version=2)))
    )
    put.start()
    try:
        assert ops.listing.wait(10), "the PUT never listed the counters"
        other = threading.Thread(target=lambda: answers.append(manager.get("not-there")))
        other.start()
        other.join(5)
        assert not other.is_alive(), "a GET waited for the PUT's listing"
    finally:
        ops.release.set()
        put.join(10)
    assert answers[0] is None  # the GET's answer, given while the PUT listed
    assert answers[1].applied_version == 2 and answers[1].loadbalancer_id == GRAPH.id
