"""``lbaas serve``'s CA rotated while it runs: its own agent holds the CA, so it is not
sent a certificate but takes the new signer itself (its 10 s check); ``finish`` waits for
that, and after it a converge still reaches the agent and the VIP still serves."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from cryptography import x509

from lbaas.certs.authority import CertificateAuthority
from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.serve_process import ServeInstance, running_serve
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID
from tests.support.processes import lbaas_env
from tests.support.waiting import wait_until

PORT = 8080


@pytest.fixture(scope="module")
def serve() -> Iterator[ServeInstance]:
    with running_serve() as instance:
        yield instance


def certs(serve: ServeInstance, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "certs", *args],
        env=lbaas_env(serve.settings), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_serve_rotates_its_ca_and_keeps_converging(serve: ServeInstance) -> None:
    backend = HttpBackend("member-1")
    try:
        with serve.api() as api:
            pool = {
                "name": "members",
                "protocol": "HTTP",
                "lb_algorithm": "ROUND_ROBIN",
                "members": [{"address": backend.address, "protocol_port": backend.port}],
            }
            listener = {"protocol": "HTTP", "protocol_port": PORT, "default_pool": pool}
            lb = api.create_loadbalancer(LOOPBACK_SUBNET_ID, listeners=[listener])
            pool_id = lb["pools"][0]["id"]
            member = api.get(f"/v2/lbaas/pools/{pool_id}/members")["members"][0]
            pki = serve.state_dir / "pki"
            old = CertificateAuthority.load_or_create(pki).certificate

            begun = certs(serve, "rotate-ca", "begin")
            assert begun.returncode == 0, begun.stderr
            signer = CertificateAuthority.load_or_create(pki)
            assert signer.certificate != old
            agent_pem = pki / "agent" / "agent.pem"

            def agent_renewed() -> bool:
                return signer.issued_this(x509.load_pem_x509_certificate(agent_pem.read_bytes()))

            wait_until(agent_renewed, 40, "serve's agent to take the new signer")
            finished = certs(serve, "rotate-ca", "finish")
            assert finished.returncode == 0, finished.stderr
            # New connections now: both ends trust the new CA alone.
            api.update_member(lb["id"], pool_id, member["id"], weight=7)
            assert api.loadbalancer(lb["id"])["provisioning_status"] == "ACTIVE"
            status = certs(serve, "status")
            assert status.returncode == 0, status.stderr
            assert "not readable" not in status.stdout, status.stdout
    finally:
        backend.close()
