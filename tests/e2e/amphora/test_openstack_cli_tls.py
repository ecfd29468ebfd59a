"""The issue-2 workflow through the unmodified ``openstack`` CLI, with TLS termination.

The certificate and key are stored with ``openstack secret store`` and joined with
``openstack secret container create --type certificate`` (python-barbicanclient against
lbaas's key manager); the load balancer, a TERMINATED_HTTPS listener on that container, a
pool and two members are created with ``openstack loadbalancer``; a TLS client then gets
the stored certificate from the VIP and answers from both members.
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.openstack_cli import OpenstackCli
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.support.certificates import issue, make_ca
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

NAME = "cli-tls"
HOST = "cli-tls.example.com"


@pytest.fixture
def cli(serve: ServeInstance, api: OctaviaApi) -> Iterator[OpenstackCli]:
    try:
        yield OpenstackCli(serve.url)
    finally:
        for lb in api.get("/v2/lbaas/loadbalancers")["loadbalancers"]:
            if lb["name"] == NAME:
                api.delete_loadbalancer(lb["id"])


def _https_get(vip: str, port: int, ca_file: Path) -> tuple[str, bytes]:
    """(subject CN of the certificate served, body) of one GET verified against the CA."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False  # the VIP is an address; the CN is checked below
    conn = http.client.HTTPSConnection(vip, port, context=context, timeout=10)
    try:
        conn.request("GET", "/", headers={"Host": HOST})
        body = conn.getresponse().read()
        assert conn.sock is not None
        cert = conn.sock.getpeercert()
    finally:
        conn.close()
    subject = dict(item[0] for item in cert["subject"])
    return str(subject["commonName"]), body


def test_terminated_https_listener_on_a_secret_stored_with_the_cli(
    serve: ServeInstance,
    api: OctaviaApi,
    cli: OpenstackCli,
    backends: BackendFleet,
    tmp_path: Path,
) -> None:
    ca = make_ca()
    server = issue(ca, HOST, (HOST,))
    (tmp_path / "cert.pem").write_bytes(server.cert_pem)
    (tmp_path / "key.pem").write_bytes(server.key_pem())
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    km = OpenstackCli(serve.url + "/key-manager/v1")
    refs = {
        part: km.value(
            "secret",
            "store",
            "--name",
            part,
            "-t",
            "text/plain",
            "--file",
            str(tmp_path / f"{part}.pem"),
            column="Secret href",
        )  # fmt: skip
        for part in ("cert", "key")
    }
    container = km.value(
        "secret", "container", "create", "--name", NAME, "--type", "certificate",
        "--secret", f"certificate={refs['cert']}", "--secret", f"private_key={refs['key']}",
        column="Container href",
    )  # fmt: skip

    one, two = backends.http("one", "two")
    lb = cli.json("loadbalancer", "create", "--name", NAME, "--vip-subnet-id", LOOPBACK_SUBNET_ID)
    api.wait_active(lb["id"])
    port = free_port_on(lb["vip_address"])
    listener = cli.json(
        "loadbalancer", "listener", "create", "--name", NAME, "--protocol", "TERMINATED_HTTPS",
        "--protocol-port", str(port), "--default-tls-container-ref", container, lb["id"],
    )  # fmt: skip
    api.wait_active(lb["id"])
    pool = cli.json(
        "loadbalancer", "pool", "create", "--name", NAME, "--protocol", "HTTP",
        "--lb-algorithm", "ROUND_ROBIN", "--listener", listener["id"],
    )  # fmt: skip
    api.wait_active(lb["id"])
    for backend in (one, two):
        cli.json(
            "loadbalancer", "member", "create", "--address", backend.address,
            "--protocol-port", str(backend.port), pool["id"],
        )  # fmt: skip
        api.wait_active(lb["id"])

    seen: set[bytes] = set()

    def both_answer() -> bool:
        try:
            name, body = _https_get(lb["vip_address"], port, tmp_path / "ca.pem")
        except OSError:
            return False
        assert name == HOST
        seen.add(body)
        return seen >= {b"one", b"two"}

    wait_until(both_answer, 60, "both members answering through the TLS listener")
