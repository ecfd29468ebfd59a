"""A health monitor takes a stopped member out of service, and puts it back when it returns."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.topology import HttpService, http_service, loadbalancer
from tests.e2e.amphora.traffic import spread, wait_for_backends
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

STATUS_TIMEOUT = 30.0


def pool_status_in_tree(service: HttpService) -> str | None:
    tree = service.api.status_tree(service.lb.id)["loadbalancer"]
    for listener in tree["listeners"]:
        for pool in listener["pools"]:
            if pool["id"] == service.pool["id"]:
                status: str = pool["operating_status"]
                return status
    return None


def test_monitor_marks_stopped_member_error_and_back_online(
    api: OctaviaApi, backends: BackendFleet
) -> None:
    up, flaky = backends.http("up", "flaky")
    with loadbalancer(api, "monitored") as lb:
        service = http_service(lb, [up, flaky])
        monitor = {
            "type": "HTTP",
            # Two failed checks of 2 s each before DOWN: the "up" backend shares this
            # process and its GIL, and one slow answer must not mark it down.
            "delay": 2,
            "timeout": 2,
            "max_retries": 1,
            "max_retries_down": 2,
            "url_path": "/",
            "expected_codes": "200",
        }
        api.create_healthmonitor(lb.id, service.pool["id"], **monitor)
        for name in ("up", "flaky"):
            wait_until(
                lambda name=name: service.member_status(name) == "ONLINE",  # type: ignore[misc]
                STATUS_TIMEOUT,
                f"member {name} ONLINE",
            )
        wait_for_backends(service.vip, service.port, {"up", "flaky"})

        flaky.stop()
        stopped_at = time.monotonic()
        wait_until(
            lambda: service.member_status("flaky") == "ERROR", STATUS_TIMEOUT, "member ERROR"
        )
        error_seen = time.monotonic() - stopped_at
        assert service.tree_member_status("flaky") == "ERROR"
        assert service.tree_member_status("up") == "ONLINE"
        assert pool_status_in_tree(service) == "DEGRADED"
        assert service.member_status("up") == "ONLINE"
        # HAProxy marked it down before the API could say so: traffic already avoids it.
        assert spread(service.vip, service.port, 100) == {"up": 100}

        flaky.start()
        restarted_at = time.monotonic()
        wait_until(
            lambda: service.member_status("flaky") == "ONLINE", STATUS_TIMEOUT, "member ONLINE"
        )
        online_seen = time.monotonic() - restarted_at
        assert service.tree_member_status("flaky") == "ONLINE"
        assert pool_status_in_tree(service) == "ONLINE"
        wait_for_backends(service.vip, service.port, {"up", "flaky"})
        counts = spread(service.vip, service.port, 100)
        assert set(counts) == {"up", "flaky"}, counts
        print(
            json.dumps(
                {
                    "measure": "health_monitor",
                    "delay_s": 1,
                    "max_retries_down": 1,
                    "heartbeat_interval_s": 0.5,
                    "stopped_to_api_error_s": round(error_seen, 3),
                    "restarted_to_api_online_s": round(online_seen, 3),
                }
            )
        )
