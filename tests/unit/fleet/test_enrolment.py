"""The enrolment bundle: a certificate naming the host, the key, settings that load."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509

from lbaas.certs.authority import CertificateAuthority
from lbaas.config import load_settings
from lbaas.errors import ConfigError
from lbaas.fleet.enrolment import Enrolment, bundle_tls, write_bundle

ENROLMENT = Enrolment(
    "rack1-h3", "10.0.0.3", 9443, "rack-1", 40, ("10.0.0.1:5555", "10.0.0.2:5555")
)


def test_the_bundle_names_the_host_and_its_settings_load(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    out = write_bundle(ca, ENROLMENT, b"k" * 64, tmp_path / "bundle")
    tls = bundle_tls(out)
    cert = x509.load_pem_x509_certificate(tls.cert.read_bytes())
    assert ca.issued_this(cert)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["rack1-h3.agents.lbaas"]
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.3"]
    for secret in (tls.key, out / "heartbeat.key"):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    agent = load_settings(out / "agent.toml", environ={}).agent
    assert (agent.host_id, agent.host, agent.zone, agent.capacity) == (
        "rack1-h3",
        "10.0.0.3",
        "rack-1",
        40,
    )
    assert agent.health_managers == ("10.0.0.1:5555", "10.0.0.2:5555")
    assert Path(agent.bundle) == out.absolute()


@pytest.mark.parametrize("host_id", ["Host_1", "-a", "a" * 64, "a.b"])
def test_a_host_id_that_is_not_one_dns_label_is_refused(tmp_path: Path, host_id: str) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    bad = Enrolment(host_id, "10.0.0.3", 9443, "nova", 1, ())
    with pytest.raises(ConfigError, match="DNS label"):
        write_bundle(ca, bad, b"k" * 64, tmp_path / "bundle")
    assert not (tmp_path / "bundle").exists()
