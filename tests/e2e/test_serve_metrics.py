"""``lbaas serve`` serves /metrics by default, on loopback, and its converge histogram
counts the converges its worker child ran (read from the child at each scrape)."""

from __future__ import annotations

import httpx

from tests.e2e.conftest import Served
from tests.e2e.test_serve_child_worker import create_and_wait_active, worker_child
from tests.support.prometheus import Exposition
from tests.support.waiting import wait_for_value


def _scrape(served: Served) -> Exposition:
    answer = httpx.get(served.url + "/metrics", timeout=10)
    assert answer.status_code == 200, answer.text[:500]
    return Exposition(answer.text)


def test_serve_counts_its_worker_childs_converges(noop_server: Served) -> None:
    assert "lbaas metrics: http://127.0.0.1:" in noop_server.log.read_text()
    create_and_wait_active(noop_server.url)

    def counted() -> float | None:
        seen = _scrape(noop_server)
        done = seen.total("lbaas_converge_duration_seconds_count", outcome="done")
        return done if done >= 1 else None

    assert wait_for_value(counted, 20.0, "the child's converge in serve's /metrics") >= 1
    seen = _scrape(noop_server)
    assert seen.value("lbaas_converge_worker_up") == 1
    assert seen.families["lbaas_converge_duration_seconds"] == "histogram"
    assert worker_child(noop_server.pid) is not None
