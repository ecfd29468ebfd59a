"""``/stats`` counts the traffic sent, across a seamless reload; PROMETHEUS serves metrics."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import LoopingClient, request, spread, wait_serving
from tests.support.waiting import wait_for_value, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

STATS_TIMEOUT = 30.0
FIRST, SECOND = 150, 100


def reloads_logged(serve: ServeInstance, api: OctaviaApi, lb_id: str) -> int:
    """How many reloads the load balancer's HAProxy master has logged."""
    (amphora,) = api.amphorae(lb_id)
    log = serve.state_dir / "amphorae" / amphora["id"] / "haproxy.log"
    return Path(log).read_text(errors="replace").count("Reloading HAProxy")


def counted_at_least(api: OctaviaApi, listener_id: str, floor: int) -> dict[str, int]:
    """The listener's stats once they count at least ``floor`` connections."""

    def enough() -> dict[str, int] | None:
        stats = api.listener_stats(listener_id)
        return stats if stats["total_connections"] >= floor else None

    return wait_for_value(enough, STATS_TIMEOUT, f"listener stats to count {floor} connections")


def settled(api: OctaviaApi, listener_id: str, quiet: float = 1.5) -> dict[str, int]:
    """The listener's stats once they stopped changing for ``quiet`` seconds."""
    last = api.listener_stats(listener_id)
    since = time.monotonic()

    def still() -> bool:
        nonlocal last, since
        now = api.listener_stats(listener_id)
        if now != last:
            last, since = now, time.monotonic()
        return time.monotonic() - since >= quiet

    wait_until(still, STATS_TIMEOUT, "listener stats to settle")
    return last


def test_stats_match_traffic_and_survive_a_reload(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two, three = backends.http("one", "two", "three")
    with loadbalancer(api, "stats") as lb:
        service = http_service(lb, [one, two])
        listener_id = service.listener["id"]
        assert api.listener_stats(listener_id)["total_connections"] == 0
        # No other client uses this listener: after FIRST requests the count is exact.
        assert sum(spread(service.vip, service.port, FIRST).values()) == FIRST
        first = counted_at_least(api, listener_id, FIRST)
        assert first["total_connections"] == FIRST, first
        assert first["bytes_in"] > 0 and first["bytes_out"] > 0, first
        lb_first = api.loadbalancer_stats(lb.id)
        assert lb_first["total_connections"] == FIRST, lb_first
        assert lb_first["bytes_in"] == first["bytes_in"]

        # A new member is a configuration change HAProxy reloads for; traffic continues.
        reloads_before = reloads_logged(serve, api, lb.id)
        with LoopingClient(service.vip, service.port) as looping:
            wait_until(lambda: looping.ok >= 20, STATS_TIMEOUT, "traffic before the reload")
            service.add_member(three, "three")
            wait_until(lambda: looping.answered_by["three"] >= 5, STATS_TIMEOUT, "the new member")
        assert looping.failures == [], looping.failures[:5]
        assert reloads_logged(serve, api, lb.id) > reloads_before
        during = looping.ok

        assert sum(spread(service.vip, service.port, SECOND).values()) == SECOND
        sent = FIRST + during + SECOND
        # Every connection counted (a heartbeat may be late) and then no more: the count
        # must not overshoot once it stops changing.
        counted_at_least(api, listener_id, sent)
        second = settled(api, listener_id)
        # Counts from before the reload are kept, and the agent holds the replaced worker
        # until it has read its final counters: nothing is lost, nothing counted twice.
        assert second["total_connections"] == sent, (second, sent)
        assert second["bytes_in"] > first["bytes_in"], (first, second)
        assert second["bytes_out"] > first["bytes_out"], (first, second)
        lb_second = api.loadbalancer_stats(lb.id)
        assert lb_second["total_connections"] >= second["total_connections"]
        print(
            json.dumps(
                {
                    "measure": "stats_across_reload",
                    "sent": sent,
                    "counted": second["total_connections"],
                    "lost_in_reload": sent - second["total_connections"],
                    "bytes_in": second["bytes_in"],
                    "bytes_out": second["bytes_out"],
                }
            )
        )


def test_prometheus_listener_serves_metrics(api: OctaviaApi, backends: BackendFleet) -> None:
    (one,) = backends.http("one")
    with loadbalancer(api, "prometheus") as lb:
        service = http_service(lb, [one])
        wait_serving(service.vip, service.port)
        metrics_port = lb.port()
        api.create_listener(lb.id, "PROMETHEUS", metrics_port)
        wait_serving(lb.vip, metrics_port, path="/metrics")
        reply = request(lb.vip, metrics_port, "/metrics")
        assert reply.status == 200
        lines = reply.text.splitlines()
        assert any(line.startswith("haproxy_") for line in lines), reply.text[:500]
        assert any(line.startswith("haproxy_frontend_") for line in lines)
