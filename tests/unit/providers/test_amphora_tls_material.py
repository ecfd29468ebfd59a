"""The controller side of TLS: a graph's certificate references become agent files.

Run against a real SQLite database and vault: files are named by content digest, the
crt-list puts the default certificate first, a certificate about to expire is logged,
and a reference that stopped resolving is a PermanentError without material."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from lbaas.certs.kek import KeyRing
from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from lbaas.db.secrets.secret_vault import SecretFields, SecretVault
from lbaas.errors import PermanentError, TemporaryError
from lbaas.keyrefs.base import KeyMaterial, Unresolvable
from lbaas.keyrefs.vault_material import VaultMaterial
from lbaas.model.enums import ListenerProtocol as LP
from lbaas.providers.amphora.tls_material import tls_bundle
from tests.support.certificates import Issued, issue, make_ca
from tests.support.graphs import listener, load_balancer

NOW = dt.datetime(2026, 1, 1)


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[SecretVault]:
    database = Database(f"sqlite:///{tmp_path / 'db.sqlite'}")
    upgrade_database(database)
    try:
        yield SecretVault(database, KeyRing.generate())
    finally:
        database.dispose()


def _container(vault: SecretVault, project: str, issued: Issued, label: str) -> str:
    ids = []
    for part, payload in (("certificate", issued.cert_pem), ("private_key", issued.key_pem())):
        row = vault.create_secret(
            project, None, SecretFields(), str(uuid.uuid4()),
            (payload, "text/plain"), NOW,
        )  # fmt: skip
        ids.append((part, row.id))
    cid = str(uuid.uuid4())
    vault.create_container(project, None, (cid, label, "certificate"), ids, NOW)
    return f"http://km/v1/containers/{cid}"


def _short_lived(ca: Issued, name: str) -> Issued:
    base = issue(ca, name, (name,))
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(days=3)
    cert = (
        x509.CertificateBuilder()
        .subject_name(base.certificate.subject)
        .issuer_name(ca.certificate.subject)
        .public_key(base.key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(soon - dt.timedelta(days=10))
        .not_valid_after(soon)
        .sign(ca.key, hashes.SHA256())
    )
    return Issued(cert, base.key)


def test_files_crt_list_order_and_expiry_warning(
    vault: SecretVault, caplog: pytest.LogCaptureFixture
) -> None:
    ca = make_ca()
    lb = load_balancer([listener("tls", LP.TERMINATED_HTTPS, 443)])
    project = lb.project_id
    default = _container(vault, project, _short_lived(ca, "d.example.com"), "aa")
    sni = _container(vault, project, issue(ca, "s.example.com", ("s.example.com",)), "bb")
    tls = replace(lb.listeners[0], default_tls_container_ref=default, sni_container_refs=(sni,))
    graph = replace(lb, listeners=(tls,))
    with caplog.at_level(logging.WARNING):
        bundle = tls_bundle(graph, VaultMaterial(vault), "/amp/tls")
    files = bundle.by_listener[tls.id]
    crt_list = bundle.files[files.crt_list.rsplit("/", 1)[1]].content.splitlines()
    assert len(crt_list) == 2 and all(line.startswith("/amp/tls/") for line in crt_list)
    first = bundle.files[crt_list[0].rsplit("/", 1)[1]].content
    assert x509.load_pem_x509_certificates(first.encode())[0].subject.rfc4514_string() == (
        "CN=d.example.com"
    )
    assert [r.getMessage() for r in caplog.records if "expires" in r.getMessage()]
    assert all("PRIVATE" not in r.getMessage() for r in caplog.records)


def test_a_reference_of_another_project_is_a_permanent_error(vault: SecretVault) -> None:
    ca = make_ca()
    ref = _container(vault, "someone-else", issue(ca, "x.example.com"), "cc")
    lb = load_balancer([listener("tls", LP.TERMINATED_HTTPS, 443, default_tls_container_ref=ref)])
    with pytest.raises(PermanentError, match="could not be retrieved") as info:
        tls_bundle(lb, VaultMaterial(vault), "/amp/tls")
    assert "BEGIN" not in str(info.value)
    with pytest.raises(PermanentError, match="key manager"):
        tls_bundle(lb, VaultMaterial(None), "/amp/tls")


class _Unreachable(KeyMaterial):
    """A key manager that cannot be asked (what BarbicanMaterial says when it is down)."""

    def secret(self, project_id: str, ref: str) -> bytes:
        raise Unresolvable("Barbican not reachable (ConnectError)", transient=True)

    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        return {"certificate": self.secret(project_id, ref)}


def test_an_unreachable_key_manager_is_retried_not_an_error() -> None:
    ref = "https://barbican.example.com/v1/containers/6b0f3a52-2d0e-4c4e-9a51-0c2b6f1d7e03"
    lb = load_balancer([listener("tls", LP.TERMINATED_HTTPS, 443, default_tls_container_ref=ref)])
    with pytest.raises(TemporaryError, match="not reachable") as retried:
        tls_bundle(lb, _Unreachable(), "/amp/tls")
    assert not isinstance(retried.value, PermanentError)
