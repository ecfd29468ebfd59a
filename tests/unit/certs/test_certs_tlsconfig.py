"""Mutual TLS with real handshakes on 127.0.0.1: only the CA's clients get in."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.certs.tlsconfig import client_context, server_context


def _serve_once(context: ssl.SSLContext) -> tuple[int, threading.Thread, list[str]]:
    listener = socket.create_server(("127.0.0.1", 0))
    outcome: list[str] = []

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b"hello")
                    outcome.append("ok")
            except (ssl.SSLError, OSError) as exc:
                outcome.append(f"refused: {exc}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread, outcome


def _talk(port: int, context: ssl.SSLContext) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.recv(5)


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority.load_or_create(tmp_path / "pki")


@pytest.fixture
def server_files(ca: CertificateAuthority, tmp_path: Path) -> TlsFiles:
    return ca.ensure_identity(tmp_path / "srv", "agent", "server", ip_addresses=["127.0.0.1"])


def test_client_with_certificate_from_ca_is_served(
    ca: CertificateAuthority, server_files: TlsFiles, tmp_path: Path
) -> None:
    client = ca.ensure_identity(tmp_path / "cli", "controller", "client")
    port, thread, outcome = _serve_once(server_context(server_files))
    assert _talk(port, client_context(client)) == b"hello"
    thread.join(10)
    assert outcome == ["ok"]


def test_client_without_certificate_is_refused(
    ca: CertificateAuthority, server_files: TlsFiles
) -> None:
    port, thread, outcome = _serve_once(server_context(server_files))
    anonymous = ssl.create_default_context(cafile=str(ca.ca_file))
    with pytest.raises((ssl.SSLError, OSError)):
        _talk(port, anonymous)
    thread.join(10)
    assert outcome and outcome[0].startswith("refused")


def test_client_from_another_ca_is_refused(server_files: TlsFiles, tmp_path: Path) -> None:
    other = CertificateAuthority.load_or_create(tmp_path / "other")
    stranger = other.ensure_identity(tmp_path / "stranger", "controller", "client")
    # The stranger trusts our server (it has our CA) but presents a foreign certificate.
    mixed = TlsFiles(cert=stranger.cert, key=stranger.key, ca=server_files.ca)
    port, thread, outcome = _serve_once(server_context(server_files))
    with pytest.raises((ssl.SSLError, OSError)):
        _talk(port, client_context(mixed))
    thread.join(10)
    assert outcome and outcome[0].startswith("refused")


def test_client_refuses_server_from_another_ca(server_files: TlsFiles, tmp_path: Path) -> None:
    other = CertificateAuthority.load_or_create(tmp_path / "other")
    client = other.ensure_identity(tmp_path / "cli", "controller", "client")
    port, thread, _ = _serve_once(server_context(server_files))
    with pytest.raises(ssl.SSLCertVerificationError):
        _talk(port, client_context(client))
    thread.join(10)
