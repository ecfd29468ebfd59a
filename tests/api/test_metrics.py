"""``/metrics``: off by default; when on, read with prometheus_client's parser — the
control plane's state counted in the database, every object with its statuses and its
listeners' traffic as heartbeats reported it, API latency by route template, converges
by outcome."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from starlette.testclient import TestClient

from lbaas.db.schema_check import MIGRATIONS
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from lbaas.wire.versions import WIRE_VERSION
from tests.api.test_amphorae import add_amphora
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.certificates import Issued, issue, make_ca
from tests.support.control_plane import asgi_app, build_plane, make_settings
from tests.support.key_manager import store_certificate_container
from tests.support.prometheus import Exposition

LB = "/v2/lbaas/loadbalancers"


def scrape(client: TestClient) -> Exposition:
    got = client.get("/metrics")
    assert got.status_code == 200
    assert got.headers["content-type"].startswith("text/plain; version=")
    return Exposition(got.text)


class TestMetrics:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        # An amphora counts as heard for stale_after (3 s by default) after its heartbeat;
        # a busy machine (the other test worker running lab tests) can take that long
        # between the heartbeat and the scrape.
        return {"api": {"metrics_enabled": True}, "health": {"stale_after": 120.0}}

    def test_state_responses_and_converges(self, api: Api, client: TestClient) -> None:
        first, second = api.create_lb(), api.create_lb()
        assert api.get(f"{LB}/{first['id']}").status_code == 200
        assert api.get(f"{LB}/nope").status_code == 404
        assert api.get("/no/such/route").status_code == 404
        seen = scrape(client)
        assert seen.value("lbaas_loadbalancers", provisioning_status="ACTIVE") == 2
        assert seen.value("lbaas_converge_jobs", state="queued") == 0
        assert seen.value("lbaas_converge_jobs", state="running") == 0
        assert seen.value("lbaas_converge_oldest_queued_seconds") == 0
        # What this release is and what the database states (rolling upgrades).
        assert seen.value("lbaas_wire_version") == WIRE_VERSION
        revision = seen.matching("lbaas_schema_revision_info")
        head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
        assert [labels["revision"] for labels, _ in revision] == [head]
        # The old per-process counter is kept under its name.
        assert seen.value("lbaas_api_responses_total", method="POST", code="201") == 2
        assert seen.value("lbaas_api_responses_total", method="GET", code="404") == 2
        latency = "lbaas_api_request_duration_seconds_count"
        assert seen.value(latency, method="POST", route=LB, code="201") == 2
        one = LB + "/{lb_id}"
        assert seen.value(latency, method="GET", route=one, code="200") >= 1
        assert seen.value(latency, method="GET", route=one, code="404") == 1
        assert seen.value(latency, method="GET", route="unmatched", code="404") == 1
        # No raw path became a label.
        routes = {labels.get("route") for labels, _ in seen.matching(latency)}
        assert not any("nope" in r or first["id"] in r for r in routes if r)
        # The in-process worker converged both creates.
        assert seen.value("lbaas_converge_duration_seconds_count", outcome="done") >= 2
        for lb in (first, second):
            labels = seen.value(
                "lbaas_loadbalancer_status",
                loadbalancer_id=lb["id"],
                project_id="p-alpha",
                provisioning_status="ACTIVE",
            )
            assert labels == 1

    def test_objects_and_traffic_after_heartbeats(
        self, api: Api, plane: Any, client: TestClient
    ) -> None:
        lb = api.create_lb()
        listener = api.create_listener(lb["id"])
        pool = api.create_pool(lb["id"], listener_id=listener["id"])
        api.create_healthmonitor(lb["id"], pool["id"])
        up = api.create_member(lb["id"], pool["id"], address="192.0.2.10")
        down = api.create_member(lb["id"], pool["id"], address="192.0.2.11")
        amphora = AmphoraId(add_amphora(plane, lb["id"]))
        store = SqlHealthStore(plane.database)
        processor = HeartbeatProcessor(store)
        sent = [(1000, 5000, 10, 1), (2500, 9000, 25, 2)]  # bytes in/out, conns, errors
        for sequence, (b_in, b_out, conns, errors) in enumerate(sent, start=1):
            counters = ListenerCounters(b_in, b_out, 3, conns, errors)
            report = HealthReport(
                LoadBalancerId(lb["id"]),
                {ListenerId(listener["id"]): ListenerHealth(ListenerState.OPEN, counters)},
                {
                    PoolId(pool["id"]): PoolHealth(
                        PoolState.UP,
                        {
                            MemberId(up["id"]): MemberState.UP,
                            MemberId(down["id"]): MemberState.DOWN,
                        },
                    )
                },
            )
            processor.process(amphora, 1, report, sequence)
        store.flush()

        seen = scrape(client)
        ids = {"listener_id": listener["id"], "loadbalancer_id": lb["id"], "project_id": "p-alpha"}
        assert seen.value("lbaas_listener_bytes_in_total", **ids) == 2500
        assert seen.value("lbaas_listener_bytes_out_total", **ids) == 9000
        assert seen.value("lbaas_listener_connections_total", **ids) == 25
        assert seen.value("lbaas_listener_request_errors_total", **ids) == 2
        assert seen.value("lbaas_listener_active_connections", **ids) == 3
        assert seen.value("lbaas_loadbalancer_connections_total", loadbalancer_id=lb["id"]) == 25
        assert seen.families["lbaas_listener_bytes_in"] == "counter"
        assert seen.families["lbaas_listener_active_connections"] == "gauge"
        member = "lbaas_member_status"
        assert seen.value(member, member_id=up["id"], operating_status="ONLINE") == 1
        assert seen.value(member, member_id=down["id"], operating_status="ERROR") == 1
        assert seen.value(member, member_id=down["id"], pool_id=pool["id"]) == 1
        assert seen.value("lbaas_pool_status", pool_id=pool["id"], operating_status="DEGRADED")
        assert seen.value("lbaas_listener_status", listener_id=listener["id"]) == 1
        assert seen.value("lbaas_loadbalancer_status", loadbalancer_id=lb["id"]) == 1
        assert seen.value("lbaas_amphorae_heard") == 1
        # Every per-object series names its load balancer (a member's through its pool).
        kinds = ("lbaas_loadbalancer_", "lbaas_listener_", "lbaas_pool_", "lbaas_member_")
        per_object = [(name, labels) for name, labels, _ in seen.samples if name.startswith(kinds)]
        assert {name.split("_")[1] for name, _ in per_object} == {
            "loadbalancer",
            "listener",
            "pool",
            "member",
        }
        assert all(labels.get("loadbalancer_id") == lb["id"] for _, labels in per_object)

        # A deleted object's series are gone at the next scrape: nothing accumulates.
        assert api.delete(f"/v2/lbaas/pools/{pool['id']}/members/{down['id']}").status_code == 204
        api.wait_lb(lb["id"])
        assert seen.matching(member, member_id=down["id"])
        assert not scrape(client).matching(member, member_id=down["id"])


class TestRefusedConverge:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"api": {"metrics_enabled": True}, "providers": {"noop_fail": "permanent"}}

    def test_a_failed_converge_is_counted_by_outcome(self, api: Api, client: TestClient) -> None:
        created = api.post(LB, {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}})
        api.wait_lb(created.json()["loadbalancer"]["id"], "ERROR")
        seen = scrape(client)
        assert seen.value("lbaas_converge_duration_seconds_count", outcome="failed") == 1
        assert seen.matching("lbaas_converge_duration_seconds_count", outcome="done") == []
        assert seen.value("lbaas_loadbalancers", provisioning_status="ERROR") == 1


def test_off_by_default(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 404


def test_a_job_no_worker_takes_is_seen_waiting(state_dir: Path) -> None:
    plane = build_plane(make_settings(state_dir, api={"metrics_enabled": True}))
    try:  # the worker is never started: the job can only wait
        with TestClient(asgi_app(plane)) as client:
            api = Api(client, "p-alpha", "member")
            body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
            assert api.post(LB, body).status_code == 201
            time.sleep(0.3)  # the job has now waited at least this long
            seen = scrape(client)
        assert seen.value("lbaas_loadbalancers", provisioning_status="PENDING_CREATE") == 1
        assert seen.value("lbaas_converge_jobs", state="queued") == 1
        assert seen.value("lbaas_converge_jobs", state="backing_off") == 0
        assert seen.value("lbaas_converge_oldest_queued_seconds") >= 0.29
    finally:
        plane.stop()


class TestCertificateExpiry:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"api": {"metrics_enabled": True}}

    def test_each_served_certificate_reports_its_seconds_left(
        self, api: Api, client: TestClient
    ) -> None:
        ca = make_ca()
        server = issue(ca, "soon.example.com")
        container = store_certificate_container(client, api.project, server)
        lb = api.create_lb()
        listener = api.create_listener(
            lb["id"],
            protocol="TERMINATED_HTTPS",
            protocol_port=443,
            default_tls_container_ref=container,
        )
        _assert_seconds_left(scrape(client), listener["id"], lb["id"], container, server)

    def test_a_prometheus_listener_given_a_certificate_reports_it_too(
        self, api: Api, client: TestClient
    ) -> None:
        server = issue(make_ca(), "metrics.example.com")
        container = store_certificate_container(client, api.project, server)
        lb = api.create_lb()
        scraped = api.create_listener(
            lb["id"], protocol="PROMETHEUS", protocol_port=9100,
            default_tls_container_ref=container,
        )  # fmt: skip
        plain = api.create_listener(lb["id"], protocol="PROMETHEUS", protocol_port=9101)
        seen = scrape(client)
        _assert_seconds_left(seen, scraped["id"], lb["id"], container, server)
        assert seen.matching(EXPIRY, listener_id=plain["id"]) == []


EXPIRY = "lbaas_listener_certificate_expiry_seconds"


def _assert_seconds_left(
    seen: Exposition, listener_id: str, lb_id: str, ref: str, served: Issued
) -> None:
    left = seen.value(EXPIRY, listener_id=listener_id, loadbalancer_id=lb_id, certificate_ref=ref)
    expected = served.certificate.not_valid_after_utc.timestamp() - time.time()
    assert abs(left - expected) < 120
