"""Frontends that terminate TLS (TERMINATED_HTTPS, PROMETHEUS with a certificate): the bind
options, HSTS and X-SSL-* headers, checked by the real ``haproxy -c`` with real certificate
files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lbaas.model.enums import ClientAuthentication
from lbaas.model.enums import ListenerProtocol as LP
from lbaas.render.haproxy import HaproxyContext, render_haproxy
from lbaas.render.haproxy.tls import ListenerTlsFiles, PoolTlsFiles
from tests.support.certificates import crl, issue, make_ca
from tests.support.graphs import listener, load_balancer, member, pool

from .haproxy_runner import check_config, prepare_run_dir


def _files(tmp: Path) -> ListenerTlsFiles:
    ca = make_ca()
    names = {"a": ("a.example.com",), "b": ("b.example.com",)}
    paths = []
    for label, dns in names.items():
        issued = issue(ca, dns[0], dns)
        path = tmp / f"{label}.pem"
        path.write_bytes(issued.cert_pem + issued.key_pem())
        paths.append(str(path))
    (tmp / "list.crt-list").write_text("\n".join(paths) + "\n")
    client_ca = make_ca("Client CA")
    (tmp / "ca.pem").write_bytes(client_ca.cert_pem)
    (tmp / "crl.pem").write_bytes(crl(client_ca, []))
    return ListenerTlsFiles(str(tmp / "list.crt-list"), str(tmp / "ca.pem"), str(tmp / "crl.pem"))


def _assert_haproxy_accepts(tmp_path: Path, text: str) -> None:
    """The real ``haproxy -c`` accepts ``text`` with the certificate files in place."""
    prepare_run_dir(tmp_path)
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(text)
    checked = check_config(cfg)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_terminated_https_renders_and_haproxy_accepts_it(tmp_path: Path) -> None:
    files = _files(tmp_path)
    tls = replace(
        listener("tls", LP.TERMINATED_HTTPS, 443, default_pool="web", insert_headers={
            "X-Forwarded-Proto": "true", "X-SSL-Client-Verify": "true", "X-SSL-Client-CN": "true",
        }),
        client_authentication=ClientAuthentication.MANDATORY,
        tls_versions=("TLSv1.2", "TLSv1.3"),
        tls_ciphers="TLS_AES_128_GCM_SHA256:ECDHE-ECDSA-AES128-GCM-SHA256",
        alpn_protocols=("h2", "http/1.1"),
        hsts_max_age=3600,
        hsts_include_subdomains=True,
    )  # fmt: skip
    lb = load_balancer([tls], [pool("web", [member("m", "127.0.0.1", 8080)])])
    ctx = HaproxyContext(
        bind_address="127.0.10.5",
        runtime_socket=str(tmp_path / "stats.sock"),
        state_dir=str(tmp_path),
        listener_tls={tls.id: files},
    )
    text = render_haproxy(lb, ctx).text
    bind = next(line.strip() for line in text.splitlines() if line.strip().startswith("bind"))
    assert bind.startswith("bind 127.0.10.5:443 ssl crt-list ")
    for words in (
        f'ca-file "{files.ca_file}" verify required crl-file "{files.crl_file}"',
        "ciphers ECDHE-ECDSA-AES128-GCM-SHA256 ciphersuites TLS_AES_128_GCM_SHA256",
        "no-sslv3 no-tlsv10 no-tlsv11 alpn h2,http/1.1",
    ):
        assert words in bind
    assert "mode http" in text
    assert "http-request set-header X-Forwarded-Proto https" in text
    assert "http-request set-header X-SSL-Client-Verify %[ssl_c_verify]" in text
    assert (
        'http-response set-header Strict-Transport-Security "max-age=3600; includeSubDomains"'
        in text
    )
    _assert_haproxy_accepts(tmp_path, text)


def test_without_client_authentication_no_ca_is_loaded(tmp_path: Path) -> None:
    files = _files(tmp_path)
    tls = listener("tls", LP.TERMINATED_HTTPS, 443)
    lb = load_balancer([tls])
    ctx = HaproxyContext(
        "127.0.10.5", str(tmp_path / "s.sock"), str(tmp_path), listener_tls={tls.id: files}
    )
    text = render_haproxy(lb, ctx).text
    assert "ca-file" not in text and "Strict-Transport-Security" not in text


def test_a_prometheus_listener_with_a_certificate_serves_its_exporter_over_tls(
    tmp_path: Path,
) -> None:
    files = _files(tmp_path)
    scraped = replace(
        listener("metrics", LP.PROMETHEUS, 9100),
        default_tls_container_ref="https://kms/containers/m",
        client_authentication=ClientAuthentication.MANDATORY,
        tls_versions=("TLSv1.3",),
    )
    plain = listener("plain", LP.PROMETHEUS, 9101)
    lb = load_balancer([scraped, plain])
    ctx = HaproxyContext(
        "127.0.10.5", str(tmp_path / "s.sock"), str(tmp_path), listener_tls={scraped.id: files}
    )
    text = render_haproxy(lb, ctx).text
    binds = [line.strip() for line in text.splitlines() if line.strip().startswith("bind")]
    assert binds[0].startswith(f'bind 127.0.10.5:9100 ssl crt-list "{files.crt_list}" ')
    assert f'ca-file "{files.ca_file}" verify required' in binds[0]
    assert "no-tlsv12" in binds[0]
    assert binds[1] == "bind 127.0.10.5:9101"
    assert text.count("use-service prometheus-exporter if { path /metrics }") == 2
    _assert_haproxy_accepts(tmp_path, text)


def test_the_operators_minimum_covers_a_listener_that_names_no_versions(tmp_path: Path) -> None:
    files = _files(tmp_path)
    scraped = replace(listener("metrics", LP.PROMETHEUS, 9100), default_tls_container_ref="x")
    own_list = replace(
        listener("tls", LP.TERMINATED_HTTPS, 443), tls_versions=("TLSv1.2", "TLSv1.3")
    )
    lb = load_balancer([scraped, own_list])
    tls = {scraped.id: files, own_list.id: files}

    def binds(minimum: str | None) -> dict[int, str]:
        ctx = HaproxyContext(
            "127.0.10.5", str(tmp_path / "s.sock"), str(tmp_path), listener_tls=tls,
            minimum_tls_version=minimum,
        )  # fmt: skip
        text = render_haproxy(lb, ctx).text
        lines = [line.strip() for line in text.splitlines() if line.strip().startswith("bind")]
        return {int(line.split()[1].rsplit(":", 1)[1]): line for line in lines}

    assert "no-tls" not in binds(None)[9100]  # HAProxy's own defaults
    floored = binds("TLSv1.3")
    assert "no-sslv3 no-tlsv10 no-tlsv11 no-tlsv12" in floored[9100]
    assert "no-tlsv12" not in floored[443]  # a stored list is the listener's own


def test_re_encrypting_pool_presents_a_client_certificate_and_verifies_members(
    tmp_path: Path,
) -> None:
    ca = make_ca("Member CA")
    client = issue(make_ca("Client CA"), "lb-client", client=True)
    (tmp_path / "client.pem").write_bytes(client.cert_pem + client.key_pem())
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    (tmp_path / "crl.pem").write_bytes(crl(ca, []))
    web = replace(
        pool("web", [member("m", "127.0.0.1", 8443)], tls_enabled=True),
        tls_versions=("TLSv1.2", "TLSv1.3"),
        alpn_protocols=("http/1.1",),
    )
    plain = pool("plain", [member("n", "127.0.0.1", 8444)], tls_enabled=True)
    lb = load_balancer(
        [
            listener("a", LP.HTTP, 80, default_pool="web"),
            listener("b", LP.HTTP, 81, default_pool="plain"),
        ],
        [web, plain],
    )
    files = PoolTlsFiles(
        str(tmp_path / "client.pem"), str(tmp_path / "ca.pem"), str(tmp_path / "crl.pem")
    )
    ctx = HaproxyContext(
        "127.0.10.5", str(tmp_path / "s.sock"), str(tmp_path), pool_tls={web.id: files}
    )
    text = render_haproxy(lb, ctx).text
    servers = [line.strip() for line in text.splitlines() if line.strip().startswith("server ")]
    verified = (
        f'ssl verify required ca-file "{files.ca_file}" crl-file "{files.crl_file}" '
        f'crt "{files.client_certificate}"'
    )
    assert sum(verified in line for line in servers) == 1
    assert any("ssl verify none" in s for s in servers)
    assert any("no-tlsv11 alpn http/1.1" in s for s in servers)
    _assert_haproxy_accepts(tmp_path, text)
