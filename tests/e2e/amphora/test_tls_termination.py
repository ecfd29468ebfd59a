"""TERMINATED_HTTPS through a real agent and HAProxy, with certificates from the key manager.

Real clients only: ``openssl s_client`` shows which certificate SNI picked (three host
names and none), ``curl --http2`` negotiates h2 by ALPN and reaches the backend with
X-Forwarded-Proto https and HSTS back, and MANDATORY client authentication refuses a
client without a certificate and one on the CRL while admitting a valid one; OPTIONAL
lets L7 rules (SSL_CONN_HAS_CERT, SSL_DN_FIELD) decide; a certificate replaced while a
client holds a keep-alive connection open causes no error on that connection. A
PROMETHEUS listener given a certificate is scraped over TLS only.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.e2e.amphora.access_log_lines import wait_lines
from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import free_port_on, http_service, loadbalancer
from tests.support.certificates import Issued, crl, issue, make_ca
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]
NAMES = ("default.example.com", "a.example.com", "b.example.com")


class KeyManager:
    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=f"{url}/key-manager/v1", timeout=30)

    def __enter__(self) -> KeyManager:
        return self

    def __exit__(self, *_: object) -> None:
        self.http.close()

    def secret(self, payload: bytes, name: str) -> str:
        body = {"name": name, "payload": payload.decode(), "payload_content_type": "text/plain"}
        got = self.http.post("/secrets", json=body)
        assert got.status_code == 201, got.text
        return str(got.json()["secret_ref"])

    def certificate(self, issued: Issued, name: str) -> str:
        refs = [
            {"name": "certificate", "secret_ref": self.secret(issued.cert_pem, f"{name}-cert")},
            {"name": "private_key", "secret_ref": self.secret(issued.key_pem(), f"{name}-key")},
        ]
        body = {"name": name, "type": "certificate", "secret_refs": refs}
        got = self.http.post("/containers", json=body)
        assert got.status_code == 201, got.text
        return str(got.json()["container_ref"])


def _served_name(vip: str, port: int, server_name: str | None) -> str:
    command = ["openssl", "s_client", "-connect", f"{vip}:{port}"]
    if server_name:
        command += ["-servername", server_name]
    done = subprocess.run(
        command, input="", capture_output=True, text=True, timeout=30, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("subject="):
            return line.split("CN", 1)[1].lstrip(" =").strip()
    raise AssertionError(done.stdout + done.stderr)


def _curl(vip: str, port: int, ca: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    host = NAMES[1]
    return subprocess.run(
        ["curl", "-sS", "--max-time", "10", "--cacert", str(ca),
         "--resolve", f"{host}:{port}:{vip}", *extra, f"https://{host}:{port}/echo"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_sni_alpn_hsts_and_client_authentication(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet, tmp_path: Path
) -> None:
    assert shutil.which("openssl") and shutil.which("curl")
    server_ca, client_ca = make_ca("Server CA"), make_ca("Client CA")
    good, revoked = issue(client_ca, "good", client=True), issue(client_ca, "bad", client=True)
    with KeyManager(serve.url) as km:
        refs = [km.certificate(issue(server_ca, n, (n,)), n.split(".")[0]) for n in NAMES]
        ca_ref = km.secret(client_ca.cert_pem, "client-ca")
        crl_ref = km.secret(crl(client_ca, [revoked.certificate]), "client-crl")
    ca_file = tmp_path / "server-ca.pem"
    ca_file.write_bytes(server_ca.cert_pem)
    for label, issued in (("good", good), ("bad", revoked)):
        (tmp_path / f"{label}.pem").write_bytes(issued.cert_pem + issued.key_pem())

    (one,) = backends.http("one")
    with loadbalancer(api, "tls") as lb:
        fields = {
            "default_tls_container_ref": refs[0],
            "sni_container_refs": refs[1:],
            "alpn_protocols": ["h2", "http/1.1"],
            "insert_headers": {"X-Forwarded-Proto": "true"},
            "hsts_max_age": 600,
        }
        service = http_service(
            lb, [one], protocol="TERMINATED_HTTPS", pool_protocol="HTTP", listener_fields=fields
        )
        vip, port = service.vip, service.port
        wait_until(lambda: _curl(vip, port, ca_file).returncode == 0, 30, "TLS to be served")
        assert [_served_name(vip, port, n) for n in (*NAMES[1:], None)] == [
            "a.example.com", "b.example.com", "default.example.com",
        ]  # fmt: skip

        head_file = tmp_path / "h2-headers"
        h2 = _curl(vip, port, ca_file, "--http2", "-D", str(head_file), "-w", "\n%{http_version}")
        assert h2.returncode == 0, h2.stderr
        body, _, version = h2.stdout.rpartition("\n")
        head = head_file.read_text()
        assert version == "2" and head.startswith("HTTP/2 200"), h2.stdout
        assert "strict-transport-security: max-age=600" in head.lower()
        assert json.loads(body)["headers"]["x-forwarded-proto"] == "https"

        mtls_port = lb.port()
        mtls = api.create_listener(
            lb.id, "TERMINATED_HTTPS", mtls_port,
            default_tls_container_ref=refs[1], default_pool_id=service.pool["id"],
            client_authentication="MANDATORY", client_ca_tls_container_ref=ca_ref,
            client_crl_container_ref=crl_ref,
            insert_headers={"X-SSL-Client-CN": "true", "X-SSL-Client-Verify": "true"},
        )  # fmt: skip
        admitted = _curl(vip, mtls_port, ca_file, "--cert", str(tmp_path / "good.pem"))
        assert admitted.returncode == 0, admitted.stderr
        seen = json.loads(admitted.stdout)["headers"]
        assert (seen["x-ssl-client-cn"], seen["x-ssl-client-verify"]) == ("good", "0")
        # Its access-log line carries the verify result and the client's subject DN.
        log_file = serve.state_dir / "access-logs" / f"{lb.id}.log"
        (line,) = [f for f in wait_lines(log_file, mtls["id"], 1) if f[9] == "200"]
        assert line[-6] == "0" and line[-5].startswith('"') and "CN=good" in line[-5], line
        assert _curl(vip, mtls_port, ca_file).returncode != 0
        assert _curl(vip, mtls_port, ca_file, "--cert", str(tmp_path / "bad.pem")).returncode != 0

        # OPTIONAL hands the verification to L7 rules: no certificate, or one whose CN is
        # not "good", is rejected (403) by policy; the valid one passes.
        optional_port = lb.port()
        optional = api.create_listener(
            lb.id, "TERMINATED_HTTPS", optional_port,
            default_tls_container_ref=refs[1], default_pool_id=service.pool["id"],
            client_authentication="OPTIONAL", client_ca_tls_container_ref=ca_ref,
        )  # fmt: skip
        policy = api.create_l7policy(lb.id, optional["id"], "REJECT", position=1)
        api.create_l7rule(lb.id, policy["id"], "SSL_CONN_HAS_CERT", "EQUAL_TO", "true", invert=True)
        other = api.create_l7policy(lb.id, optional["id"], "REJECT", position=2)
        api.create_l7rule(
            lb.id, other["id"], "SSL_DN_FIELD", "EQUAL_TO", "good", key="CN", invert=True
        )
        status = ("-o", "/dev/null", "-w", "%{http_code}")
        assert _curl(vip, optional_port, ca_file, *status).stdout == "403"
        cert_args = ("--cert", str(tmp_path / "good.pem"))
        assert _curl(vip, optional_port, ca_file, *cert_args, *status).stdout == "200"

        # The key material reached the agent's host only as private files.
        tls_files = [p for d in serve.amphora_dirs() for p in (d / "tls").glob("*")]
        assert tls_files and all(p.stat().st_mode & 0o777 == 0o600 for p in tls_files)


def test_re_encryption_to_a_member_that_requires_a_client_certificate(
    serve: ServeInstance, api: OctaviaApi, tmp_path: Path
) -> None:
    member_ca, client_ca = make_ca("Member CA"), make_ca("LB client CA")
    member_cert = issue(member_ca, "127.0.0.1")
    (tmp_path / "member.pem").write_bytes(member_cert.cert_pem)
    (tmp_path / "member.key").write_bytes(member_cert.key_pem())
    (tmp_path / "client-ca.pem").write_bytes(client_ca.cert_pem)
    port = free_port_on("127.0.0.1")
    # A TLS member that refuses any client without a certificate from client_ca.
    member = subprocess.Popen(
        ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", str(tmp_path / "member.pem"),
         "-key", str(tmp_path / "member.key"), "-CAfile", str(tmp_path / "client-ca.pem"),
         "-Verify", "1", "-www", "-quiet"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    km = KeyManager(serve.url)
    try:
        client_ref = km.certificate(issue(client_ca, "lb", client=True), "lb-client")
        ca_ref = km.secret(member_ca.cert_pem, "member-ca")
        with loadbalancer(api, "reencrypt") as lb:
            pool_fields = {
                "tls_enabled": True,
                "tls_container_ref": client_ref,
                "ca_tls_container_ref": ca_ref,
            }
            service = http_service(lb, [], pool_fields=pool_fields)
            api.create_member(lb.id, service.pool["id"], "127.0.0.1", port)
            url = f"http://{service.vip}:{service.port}/"

            def served() -> bool:
                try:
                    return httpx.get(url, timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_until(served, 30, "the TLS member to answer through the load balancer")
            assert "s_server" in httpx.get(url, timeout=5).text  # openssl's status page
    finally:
        km.http.close()
        member.terminate()
        member.wait(10)


def test_a_replaced_certificate_keeps_an_open_keep_alive_connection(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    ca = make_ca("Rotation CA")
    with KeyManager(serve.url) as km:
        old = km.certificate(issue(ca, "old.example.com", ("www.example.com",)), "old")
        new = km.certificate(issue(ca, "new.example.com", ("www.example.com",)), "new")
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    (one,) = backends.http("one")
    with loadbalancer(api, "rotate") as lb:
        service = http_service(
            lb, [one], protocol="TERMINATED_HTTPS", pool_protocol="HTTP",
            listener_fields={"default_tls_container_ref": old},
        )  # fmt: skip
        vip, port = service.vip, service.port

        def connect() -> http.client.HTTPSConnection:
            conn = http.client.HTTPSConnection(vip, port, context=context, timeout=10)
            conn.sock = context.wrap_socket(
                socket.create_connection((vip, port), timeout=10), server_hostname="www.example.com"
            )
            return conn

        def subject(conn: http.client.HTTPSConnection) -> str:
            assert isinstance(conn.sock, ssl.SSLSocket)
            cert = conn.sock.getpeercert()
            assert cert is not None
            return str(dict(x[0] for x in cert["subject"])["commonName"])

        wait_until(lambda: _answers_tls(connect), 30, "TLS to be served")
        held = connect()
        held.request("GET", "/")
        assert held.getresponse().read() == b"one"
        assert subject(held) == "old.example.com"
        api.update_listener(lb.id, service.listener["id"], default_tls_container_ref=new)
        same = held.sock
        held.request("GET", "/")  # the same connection, across the reload
        assert held.sock is same  # not silently reopened by http.client
        reply = held.getresponse()
        assert (reply.status, reply.read()) == (200, b"one")
        held.close()
        fresh = connect()
        assert subject(fresh) == "new.example.com"
        fresh.close()


def test_a_prometheus_listener_with_a_certificate_is_scraped_over_tls(
    serve: ServeInstance, api: OctaviaApi, tmp_path: Path
) -> None:
    ca = make_ca("Metrics CA")
    with KeyManager(serve.url) as km:
        ref = km.certificate(issue(ca, NAMES[1], (NAMES[1],)), "metrics")
    ca_file = tmp_path / "metrics-ca.pem"
    ca_file.write_bytes(ca.cert_pem)
    with loadbalancer(api, "metrics-tls") as lb:
        port = lb.port()
        api.create_listener(lb.id, "PROMETHEUS", port, default_tls_container_ref=ref)
        host = NAMES[1]

        def scrape(scheme: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["curl", "-sS", "--max-time", "10", "--cacert", str(ca_file),
                 "--resolve", f"{host}:{port}:{lb.vip}", f"{scheme}://{host}:{port}/metrics"],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip

        wait_until(lambda: scrape("https").returncode == 0, 30, "the exporter over TLS")
        lines = scrape("https").stdout.splitlines()
        assert any(line.startswith("haproxy_frontend_") for line in lines), lines[:20]
        assert _served_name(lb.vip, port, host) == host
        # Nothing answers in plain text on that port.
        assert "haproxy_" not in scrape("http").stdout


def _answers_tls(connect: Callable[[], http.client.HTTPSConnection]) -> bool:
    try:
        conn = connect()
        try:
            conn.request("GET", "/")
            return conn.getresponse().status == 200
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return False
