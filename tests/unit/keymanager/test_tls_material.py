"""Certificate material checked as Octavia checks it: parses, key matches, PKCS#12."""

from __future__ import annotations

import pytest
from cryptography import x509

from lbaas.certs.tls_material import MaterialError, from_parts, from_pkcs12, load_crl
from tests.support.certificates import crl, issue, make_ca


def test_a_container_with_an_encrypted_key_and_a_chain_becomes_one_pem() -> None:
    ca = make_ca()
    server = issue(ca, "www.example.com", ("www.example.com", "example.com"))
    got = from_parts(server.cert_pem, server.key_pem(b"pw"), ca.cert_pem, b"pw")
    bundle = got.pem_bundle()
    assert bundle.count(b"BEGIN CERTIFICATE") == 2
    assert b"BEGIN PRIVATE KEY" in bundle and b"ENCRYPTED" not in bundle
    assert x509.load_pem_x509_certificates(bundle)[0] == server.certificate
    assert got.host_names() == ("www.example.com", "example.com")


def test_refusals_name_the_reason_never_the_material() -> None:
    ca = make_ca()
    server, other = issue(ca, "a"), issue(ca, "b")
    cases = [
        (lambda: from_parts(server.cert_pem, other.key_pem()), "does not match"),
        (lambda: from_parts(server.cert_pem, server.key_pem(b"pw"), None, b"bad"), "passphrase"),
        (lambda: from_parts(server.cert_pem, server.key_pem(b"pw")), "passphrase"),
        (lambda: from_parts(b"garbage", server.key_pem()), "not a valid"),
        (lambda: from_parts(server.cert_pem, None), "no private_key"),
        (lambda: from_pkcs12(b"garbage"), "PKCS#12"),
    ]
    for call, reason in cases:
        with pytest.raises(MaterialError, match=reason) as info:
            call()
        assert "BEGIN" not in str(info.value)


def test_pkcs12_with_and_without_password() -> None:
    ca = make_ca()
    server = issue(ca, "p12.example.com")
    assert from_pkcs12(server.pkcs12()).certificate == server.certificate
    bundle = from_pkcs12(server.pkcs12(b"pw", [ca.certificate]), b"pw")
    assert bundle.intermediates == (ca.certificate,)
    with pytest.raises(MaterialError):
        from_pkcs12(server.pkcs12(b"pw"), b"wrong")


def test_crl_loads() -> None:
    ca = make_ca()
    bad = issue(ca, "bad", client=True)
    listed = load_crl(crl(ca, [bad.certificate]))
    assert listed.get_revoked_certificate_by_serial_number(bad.certificate.serial_number)
