"""The CA rotated and every certificate reissued under converges, heartbeats and traffic.

A control plane (api, worker, one health manager) and two enrolled agents, all real
processes with real HAProxy. While one thread keeps changing members' weights (each a
converge through an agent's mutual-TLS API, waited for ACTIVE) and another sends HTTP
requests through the VIPs, ``lbaas certs rotate-ca begin`` trusts a new CA everywhere and
reissues the controller's and both agents' certificates under it, and ``finish`` retires
the old CA. Nothing restarts. At the end: no converge retried or failed (the worker's
``lbaas_converge_duration_seconds`` by outcome), no heartbeat rejected (the health
manager's ``lbaas_heartbeats``), no request failed, every host UP throughout; each agent
presents a certificate of the new CA and refuses the controller's old one.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.errors import AgentUnreachable
from lbaas.fleet.client import AgentClient
from lbaas.model.fleet import agent_server_name
from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import free_port
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.fleet import Fleet, running_fleet
from tests.support.prometheus import Exposition

PORT = 8080


@pytest.fixture(scope="module")
def ports() -> dict[str, int]:
    return {"worker": free_port(), "health": free_port()}


@pytest.fixture(scope="module")
def fleet(ports: dict[str, int]) -> Iterator[Fleet]:
    extra = {
        "worker": {"metrics_port": ports["worker"]},
        # Renewal rounds run during the rotation too: they must not get in its way.
        "health": {"metrics_port": ports["health"], "certificate_renewal_interval": 1.0},
    }
    with running_fleet(("nova", "nova"), health_managers=1, extra=extra) as running:
        yield running


def scrape(port: int) -> Exposition:
    return Exposition(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text)


def pki(fleet: Fleet) -> Path:
    return fleet.state_dir / "ctl" / "pki"


def presented(fleet: Fleet, host_id: str, tls: TlsFiles) -> x509.Certificate:
    host = fleet.hosts[host_id]
    url = f"https://127.0.0.1:{host.port}"
    with AgentClient(url, tls=tls, timeout=10, server_name=agent_server_name(host_id)) as c:
        return x509.load_pem_x509_certificate(c.certificate().certificate.encode())


class Load:
    """Converges and requests in two threads until stopped; what failed."""

    def __init__(self, api: OctaviaApi, fleet: Fleet, lbs: list[dict[str, Any]]) -> None:
        self.api, self.fleet, self.lbs = api, fleet, lbs
        self.converges = self.requests = 0
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._converge, daemon=True),
            threading.Thread(target=self._traffic, daemon=True),
        ]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(120)

    def _converge(self) -> None:
        weight = 1
        while not self.stop.is_set():
            weight = weight % 9 + 1
            for lb in self.lbs:
                try:
                    self.api.update_member(lb["id"], lb["pool_id"], lb["member_id"], weight=weight)
                    self.converges += 1
                except AssertionError as exc:
                    self.failures.append(f"converge of {lb['id']}: {exc}")
            hosts = self.fleet.host_list()
            down = [h for h, row in hosts.items() if row["status"] != "UP"]
            if down:
                self.failures.append(f"hosts DOWN: {down}")

    def _traffic(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self.stop.is_set():
                for lb in self.lbs:
                    try:
                        status = client.get(f"http://{lb['vip_address']}:{PORT}/").status_code
                    except httpx.HTTPError as exc:
                        self.failures.append(f"request to {lb['vip_address']}: {exc}")
                        continue
                    self.requests += 1
                    if status != 200:
                        self.failures.append(f"request to {lb['vip_address']}: {status}")
                self.stop.wait(0.05)


def test_the_ca_rotates_under_converges_heartbeats_and_traffic(
    fleet: Fleet, ports: dict[str, int]
) -> None:
    backend = HttpBackend("member-1")
    old_ca = CertificateAuthority.load_or_create(pki(fleet)).certificate
    controller = pki(fleet) / "controller"
    old_cert, old_key = (
        (controller / "controller.pem").read_bytes(),
        (controller / "controller.key").read_bytes(),
    )
    try:
        with OctaviaApi(fleet.url) as api:
            lbs = []
            for index in range(2):
                pool = {
                    "name": "members",
                    "protocol": "HTTP",
                    "lb_algorithm": "ROUND_ROBIN",
                    "members": [{"address": backend.address, "protocol_port": backend.port}],
                }
                listener = {"protocol": "HTTP", "protocol_port": PORT, "default_pool": pool}
                lb = api.create_loadbalancer(
                    LOOPBACK_SUBNET, name=f"rot-{index}", listeners=[listener]
                )
                pool_id = lb["pools"][0]["id"]
                members = api.get(f"/v2/lbaas/pools/{pool_id}/members")["members"]
                lbs.append({**lb, "pool_id": pool_id, "member_id": members[0]["id"]})
            placed = {a["compute_id"] for lb in lbs for a in api.amphorae(lb["id"])}
            assert placed == {"host-0", "host-1"}, placed  # both agents take part
            first_host = next(a["compute_id"] for a in api.amphorae(lbs[0]["id"]))
            before = scrape(ports["health"]).total("lbaas_heartbeats_total", outcome="accepted")

            with Load(api, fleet, lbs) as load:
                time.sleep(2)
                begun = fleet.lbaas("certs", "rotate-ca", "begin")
                time.sleep(3)  # converges go on with the new certificates, both CAs trusted
                finished = fleet.lbaas("certs", "rotate-ca", "finish")
                time.sleep(3)  # and with the old CA retired
            assert "2 host(s) reissued" in begun, begun
            assert "retired" in finished, finished
            print(f"under the rotation: {load.converges} converges, {load.requests} requests")
            assert load.failures == [], load.failures[:5]
            assert load.converges >= 4 and load.requests >= 20, (load.converges, load.requests)

        worker = scrape(ports["worker"])
        name = "lbaas_converge_duration_seconds_count"
        assert worker.total(name, outcome="done") >= load.converges
        assert worker.total(name, outcome="retry") == 0
        assert worker.total(name, outcome="failed") == 0
        health = scrape(ports["health"])
        for outcome in ("rejected_signature", "rejected_replay", "rejected_late", "malformed"):
            assert health.total("lbaas_heartbeats_total", outcome=outcome) == 0, outcome
        assert health.total("lbaas_heartbeats_total", outcome="accepted") > before

        new_ca = CertificateAuthority.load_or_create(pki(fleet))
        assert new_ca.certificate != old_ca
        trust = x509.load_pem_x509_certificates((pki(fleet) / "trust.pem").read_bytes())
        assert trust == [new_ca.certificate]
        current = TlsFiles(controller / "controller.pem", controller / "controller.key",
                           pki(fleet) / "trust.pem")  # fmt: skip
        assert new_ca.issued_this(x509.load_pem_x509_certificate(current.cert.read_bytes()))
        for host_id in ("host-0", "host-1"):
            assert new_ca.issued_this(presented(fleet, host_id, current)), host_id
        # The controller's certificate of the old CA opens no agent any more.
        stale = TlsFiles(fleet.state_dir / "old.pem", fleet.state_dir / "old.key", current.ca)
        stale.cert.write_bytes(old_cert)
        stale.key.write_bytes(old_key)
        with pytest.raises(AgentUnreachable):
            presented(fleet, "host-0", stale)
        # Every certificate's expiry, as the operator and Prometheus see it.
        status = fleet.lbaas("certs", "status")
        rows = [line.split() for line in status.splitlines()[1:]]
        assert [row[:2] for row in rows] == [
            ["ca", "expires"], ["controller", "expires"], ["agent", "host-0"], ["agent", "host-1"]
        ]  # fmt: skip
        assert "not readable" not in status and "EXPIRED" not in status
        # lbaas diagnose ends with the link's certificates (the host of this load balancer).
        diagnosed = subprocess.run(
            [sys.executable, "-m", "lbaas.cli", "diagnose", lbs[0]["id"]],
            env=fleet.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert diagnosed.returncode in (0, 1), diagnosed.stderr  # 1: a hop failed, not ours
        tail = diagnosed.stdout.split("certificates of the controller-agent link:")[1]
        assert [line.split()[:2] for line in tail.strip().splitlines()] == [
            ["ca", "expires"], ["controller", "expires"], ["agent", first_host]
        ]  # fmt: skip
        expiry = "lbaas_certificate_expiry_timestamp_seconds"
        assert health.value(expiry, role="ca") == new_ca.certificate.not_valid_after_utc.timestamp()
        assert health.value(expiry, role="agent", host="host-1") > time.time()
    finally:
        backend.close()
