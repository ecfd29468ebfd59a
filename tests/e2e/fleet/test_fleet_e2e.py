"""The agent fleet end to end: three loopback agents are three hosts.

One control plane (api, worker, two health managers) and three agents, each enrolled with
``lbaas agent enrol`` and started from its bundle, with real HAProxy. In order: the hosts
are listed and the controller checks which agent answers; load balancers spread over the
hosts within one of each other and follow ``compute_zone``; one health manager dies and
the hosts are still tracked; a host is lost (agent and HAProxies SIGKILLed) and its
load balancers serve again on the others (curl through the VIPs); when it comes back its
stale amphorae are removed without ever being started again.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.errors import AgentUnreachable
from lbaas.fleet.client import AgentClient
from lbaas.model.fleet import agent_server_name
from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import haproxy_pids_under
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.fleet import Fleet, curl_status, running_fleet
from tests.support.waiting import wait_until

PORT = 8080
ZONES = ("nova", "nova", "zone-b")


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with running_fleet(ZONES) as running:
        yield running


@pytest.fixture(scope="module")
def api(fleet: Fleet) -> Iterator[OctaviaApi]:
    with OctaviaApi(fleet.url) as client:
        yield client


@pytest.fixture(scope="module")
def backend() -> Iterator[HttpBackend]:
    server = HttpBackend("member-1")
    yield server
    server.close()


def controller_tls(fleet: Fleet) -> TlsFiles:
    pki = fleet.state_dir / "ctl" / "pki"
    ca = CertificateAuthority.load_or_create(pki)
    return ca.ensure_identity(pki / "controller", "controller", "client")


def agent_client(fleet: Fleet, port: int, host_id: str) -> AgentClient:
    return AgentClient(
        f"https://127.0.0.1:{port}",
        tls=controller_tls(fleet),
        timeout=10,
        server_name=agent_server_name(host_id),
    )


def create_served_lb(api: OctaviaApi, backend: HttpBackend, **fields: Any) -> dict[str, Any]:
    pool = {
        "name": "members",
        "protocol": "HTTP",
        "lb_algorithm": "ROUND_ROBIN",
        "members": [{"address": backend.address, "protocol_port": backend.port}],
    }
    listener = {"protocol": "HTTP", "protocol_port": PORT, "default_pool": pool}
    return api.create_loadbalancer(LOOPBACK_SUBNET, listeners=[listener], **fields)


def host_of(api: OctaviaApi, lb_id: str) -> str:
    live = [a for a in api.amphorae(lb_id) if a["status"] != "DELETED"]
    assert len(live) == 1, live
    return str(live[0]["compute_id"])


def test_enrolled_hosts_are_listed_and_each_agent_proves_its_host(fleet: Fleet) -> None:
    hosts = fleet.host_list(cli=True)  # what an operator sees
    assert sorted(hosts) == ["host-0", "host-1", "host-2"]
    assert [hosts[h]["zone"] for h in sorted(hosts)] == list(ZONES)
    assert {h["status"] for h in hosts.values()} == {"UP"}
    host0 = fleet.hosts["host-0"]
    with agent_client(fleet, host0.port, "host-0") as right:
        assert right.info().mode == "loopback"
    # host-0's agent presents a certificate from the same CA, but not host-1's name.
    with agent_client(fleet, host0.port, "host-1") as wrong:
        with pytest.raises(AgentUnreachable) as refused:
            wrong.info()
    assert "CERTIFICATE_VERIFY_FAILED" in refused.value.operator_message


def test_placement_spreads_within_one_and_follows_compute_zone(
    fleet: Fleet, api: OctaviaApi, backend: HttpBackend
) -> None:
    lbs = [create_served_lb(api, backend, name=f"spread-{i}") for i in range(6)]
    placed = Counter(host_of(api, lb["id"]) for lb in lbs)
    assert set(placed) <= {"host-0", "host-1", "host-2"}
    counts = [placed.get(h, 0) for h in ("host-0", "host-1", "host-2")]
    assert max(counts) - min(counts) <= 1, placed
    for lb in lbs:
        assert curl_status(lb["vip_address"], PORT) == 200
    # Octavia's amphora key, refused with 400 before: hosts declaring the zone take them.
    data = json.dumps({"compute_zone": "zone-b"})
    body = {"name": "zone-b", "provider_name": "amphora", "availability_zone_data": data}
    r = api.http.post(
        "/v2/lbaas/availabilityzoneprofiles", json={"availability_zone_profile": body}
    )
    assert r.status_code == 201, r.text
    profile_id = r.json()["availability_zone_profile"]["id"]
    zone = {"name": "b", "availability_zone_profile_id": profile_id}
    r = api.http.post("/v2/lbaas/availabilityzones", json={"availability_zone": zone})
    assert r.status_code == 201, r.text
    zoned = [
        create_served_lb(api, backend, name=f"zoned-{i}", availability_zone="b") for i in range(2)
    ]
    assert {host_of(api, lb["id"]) for lb in zoned} == {"host-2"}


def test_hosts_stay_tracked_when_one_health_manager_dies(fleet: Fleet) -> None:
    first = fleet.health[0]
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    before = fleet.host_list()
    time.sleep(2 * fleet.settings["health"]["host_stale_after"])
    after = fleet.host_list()
    for host_id, row in after.items():
        assert row["status"] == "UP", row
        assert row["last_heartbeat_at"] > before[host_id]["last_heartbeat_at"]


def test_lost_host_is_rebuilt_elsewhere_and_cleaned_when_it_returns(
    fleet: Fleet, api: OctaviaApi
) -> None:
    lbs = api.get("/v2/lbaas/loadbalancers")["loadbalancers"]
    victims = [lb for lb in lbs if host_of(api, lb["id"]) == "host-1"]
    assert victims, "placement put nothing on host-1"
    stale = {a["id"] for lb in victims for a in api.amphorae(lb["id"]) if a["status"] != "DELETED"}
    lost = fleet.hosts["host-1"]
    fleet.kill_host(lost)
    wait_until(lambda: fleet.host_list()["host-1"]["status"] == "DOWN", 30, "host-1 DOWN")
    for lb in victims:
        wait_until(
            lambda lb=lb: (
                host_of_or_none(api, lb["id"]) not in (None, "host-1")
                and api.loadbalancer(lb["id"])["provisioning_status"] == "ACTIVE"
            ),
            60,
            f"{lb['id']} rebuilt on another host",
        )
        wait_until(lambda lb=lb: curl_status(lb["vip_address"], PORT) == 200, 30, "VIP serving")
    # The host comes back with its stale amphorae on disk: they are held, never started,
    # and removed once the controller hears the host.
    assert stale <= {p.name for p in (lost.state_dir / "amphorae").iterdir()}
    fleet.start_agent(lost)
    with agent_client(fleet, lost.port, "host-1") as client:

        def cleaned() -> bool:
            assert haproxy_pids_under(lost.state_dir) == [], "a stale amphora was started"
            try:
                return not set(client.info().amphorae) & stale
            except AgentUnreachable:
                return False

        wait_until(cleaned, 60, "host-1's stale amphorae removed")
    assert fleet.host_list()["host-1"]["status"] == "UP"
    for lb in victims:
        assert curl_status(lb["vip_address"], PORT) == 200


def host_of_or_none(api: OctaviaApi, lb_id: str) -> str | None:
    live = [a for a in api.amphorae(lb_id) if a["status"] != "DELETED"]
    return str(live[0]["compute_id"]) if len(live) == 1 else None
