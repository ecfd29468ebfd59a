"""``/metrics`` of a real ``lbaas serve`` after real traffic through HAProxy: the listener's,
the load balancer's, the pool's and each member's counters (connections and requests)
equal what was sent (and what each backend answered); a member whose backend stops shows
failed health checks; heartbeats are counted by the
embedded health manager, and the exposition parses with prometheus_client's parser; the
agent's VIP probe turns 0 when the VIP stops answering while its members are healthy."""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import spread
from tests.support.prometheus import Exposition
from tests.support.waiting import wait_for_value, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

SENT = 60


def scrape(serve: ServeInstance) -> Exposition:
    answer = httpx.get(f"{serve.url}/metrics", timeout=30)
    assert answer.status_code == 200
    return Exposition(answer.text)


def test_counters_match_the_traffic_sent(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "metrics") as lb:
        service = http_service(lb, [one, two])
        listener_id = service.listener["id"]
        pool_id = service.pool["id"]
        served = spread(service.vip, service.port, SENT)
        assert sum(served.values()) == SENT

        def counted() -> Exposition | None:
            seen = scrape(serve)
            listener = seen.total("lbaas_listener_connections_total", listener_id=listener_id)
            pool = seen.total("lbaas_pool_connections_total", pool_id=pool_id)
            members = seen.total("lbaas_member_connections_total", pool_id=pool_id)
            return seen if min(listener, pool, members) >= SENT else None

        seen = wait_for_value(counted, 30.0, f"/metrics to count {SENT} connections")
        ids = {"listener_id": listener_id, "loadbalancer_id": lb.id}
        assert seen.value("lbaas_listener_connections_total", **ids) == SENT
        # One HTTP request per connection: HAProxy's req_tot, carried by the heartbeat.
        assert seen.value("lbaas_listener_requests_total", **ids) == SENT
        assert seen.value("lbaas_loadbalancer_requests_total", loadbalancer_id=lb.id) == SENT
        assert seen.value("lbaas_listener_bytes_in_total", **ids) > 0
        assert seen.value("lbaas_listener_bytes_out_total", **ids) > 0
        assert seen.value("lbaas_loadbalancer_connections_total", loadbalancer_id=lb.id) == SENT
        # The pool's and each member's, from HAProxy's backend and server rows.
        pool = {"pool_id": pool_id, "loadbalancer_id": lb.id}
        assert seen.value("lbaas_pool_connections_total", **pool) == SENT
        assert seen.value("lbaas_pool_requests_total", **pool) == SENT
        assert seen.value("lbaas_pool_request_errors_total", **pool) == 0
        assert seen.value("lbaas_pool_check_failures_total", **pool) == 0
        assert seen.families["lbaas_pool_active_connections"] == "gauge"
        member_bytes = 0.0
        for name, member in service.members.items():
            ids = {"member_id": member["id"], "pool_id": pool_id}
            assert served[name] > 0, served
            assert seen.value("lbaas_member_connections_total", **ids) == served[name]
            assert seen.value("lbaas_member_requests_total", **ids) == served[name]
            assert seen.value("lbaas_member_bytes_out_total", **ids) > 0
            member_bytes += seen.value("lbaas_member_bytes_in_total", **ids)
        assert member_bytes == seen.value("lbaas_pool_bytes_in_total", **pool) > 0
        # The same figures as the API's /stats, from the same records.
        stats = api.listener_stats(listener_id)
        assert stats["total_connections"] == SENT
        assert len(service.members) == 2
        for member in service.members.values():
            assert seen.value("lbaas_member_status", member_id=member["id"]) == 1
        assert seen.value("lbaas_heartbeats_total", outcome="accepted") > 0
        assert seen.value("lbaas_failover_circuit_open", scope="all") == 0
        latency = "lbaas_api_request_duration_seconds_count"
        assert seen.value(latency, method="POST", route="/v2/lbaas/loadbalancers", code="201")
        assert seen.value("lbaas_agent_hosts_up") >= 1
        assert seen.value("lbaas_amphorae_heard") >= 1


def test_a_stopped_backend_shows_failed_health_checks(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    well, stopped = backends.http("hc-well", "hc-stopped")
    with loadbalancer(api, "checks") as lb:
        service = http_service(lb, [well, stopped])
        monitor = {"type": "HTTP", "delay": 1, "timeout": 1, "max_retries": 1}
        api.create_healthmonitor(lb.id, service.pool["id"], max_retries_down=3, **monitor)
        wait_until(lambda: service.member_status("hc-stopped") == "ONLINE", 30.0, "ONLINE")
        stopped.stop()
        wait_until(lambda: service.member_status("hc-stopped") == "ERROR", 30.0, "ERROR")
        failed = {"member_id": service.members["hc-stopped"]["id"]}
        fine = {"member_id": service.members["hc-well"]["id"]}

        def counted() -> Exposition | None:
            seen = scrape(serve)
            return seen if seen.total("lbaas_member_check_failures_total", **failed) else None

        seen = wait_for_value(counted, 30.0, "failed checks in /metrics")
        # HAProxy counts failed checks while the server is up: up to fall (3) of them.
        assert 1 <= seen.value("lbaas_member_check_failures_total", **failed) <= 3
        assert seen.value("lbaas_member_check_failures_total", **fine) == 0
        pool = seen.value("lbaas_pool_check_failures_total", pool_id=service.pool["id"])
        assert pool == seen.value("lbaas_member_check_failures_total", **failed)


@contextmanager
def vip_port_blocked(vip: str, port: int) -> Iterator[None]:
    """Connections to vip:port are reset by the kernel (HAProxy and its members untouched)."""
    table = f"lbvp{secrets.token_hex(3)}"
    rules = (
        f"table ip {table} {{\n chain input {{\n"
        "  type filter hook input priority -10; policy accept;\n"
        f"  ip daddr {vip} tcp dport {port} reject with tcp reset\n }}\n}}\n"
    )
    subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)
    try:
        yield
    finally:
        subprocess.run(["nft", "delete", "table", "ip", table], check=True)


def test_a_vip_that_stops_answering_shows_while_its_members_are_healthy(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("vp-one", "vp-two")
    with loadbalancer(api, "vip-probe") as lb:
        service = http_service(lb, [one, two])
        monitor = {"type": "HTTP", "delay": 1, "timeout": 1, "max_retries": 1}
        api.create_healthmonitor(lb.id, service.pool["id"], **monitor)
        ids = {"listener_id": service.listener["id"], "loadbalancer_id": lb.id}

        def members_online(seen: Exposition) -> bool:
            statuses = [
                [labels["operating_status"] for labels, _ in seen.matching(name, member_id=mid)]
                for name, mid in (
                    ("lbaas_member_status", m["id"]) for m in service.members.values()
                )
            ]
            return len(statuses) == 2 and all(found == ["ONLINE"] for found in statuses)

        def probe_up(wanted: float) -> Exposition | None:
            seen = scrape(serve)
            found = seen.matching("lbaas_listener_vip_probe_up", **ids)
            return seen if found and found[0][1] == wanted and members_online(seen) else None

        seen = wait_for_value(lambda: probe_up(1), 30.0, "the VIP probe to answer")
        assert seen.value("lbaas_listener_vip_probe_up", **ids) == 1
        assert seen.families["lbaas_listener_vip_probe_up"] == "gauge"
        with vip_port_blocked(lb.vip, service.port):
            # The members stay healthy (checked by HAProxy): only the VIP hop is down.
            wait_for_value(lambda: probe_up(0), 30.0, "the VIP probe to fail")
        seen = wait_for_value(lambda: probe_up(1), 30.0, "the VIP probe to answer again")
        # Probes come from a source every frontend rejects: none is a tenant connection.
        before = seen.value("lbaas_listener_connections_total", **ids)
        assert sum(spread(service.vip, service.port, 5).values()) == 5

        def counted() -> Exposition | None:
            now = scrape(serve)
            found = now.matching("lbaas_listener_connections_total", **ids)
            return now if found[0][1] >= before + 5 else None

        wait_for_value(counted, 30.0, "/metrics to count 5 more connections")
        time.sleep(3)  # three more probe rounds, which must add nothing
        assert scrape(serve).value("lbaas_listener_connections_total", **ids) == before + 5
