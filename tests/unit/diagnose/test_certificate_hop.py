"""The certificates hop on graphs and key material made here: an expired certificate, a
re-encrypting pool's references, and the first unreadable reference named. The key
material is a dictionary behind the ``KeyMaterial`` interface (passed in); the hop against
the real key manager is in ``tests/api/test_diagnose.py``."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from lbaas.diagnose.certificates import certificate_hop
from lbaas.diagnose.hops import Level
from lbaas.keyrefs.base import KeyMaterial, Unresolvable
from lbaas.model.enums import ListenerProtocol as LP
from tests.support.certificates import Issued, issue, make_ca
from tests.support.graphs import listener, load_balancer, pool

NOW = dt.datetime.now(dt.UTC)
REF = "https://km.example/v1/containers/6b0f3a52-2d0e-4c4e-9a51-0c2b6f1d7e0{}"


class Containers(KeyMaterial):
    def __init__(self, held: dict[str, Issued]) -> None:
        self._held = held

    def secret(self, project_id: str, ref: str) -> bytes:
        raise Unresolvable("not found")

    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        if ref not in self._held:
            raise Unresolvable("not found")
        issued = self._held[ref]
        return {"certificate": issued.cert_pem, "private_key": issued.key_pem()}


def test_an_expired_certificate_fails_the_hop() -> None:
    ca = make_ca()
    tls = replace(listener("l", LP.TERMINATED_HTTPS, 443), default_tls_container_ref=REF.format(1))
    verdict = certificate_hop(
        load_balancer([tls]),
        Containers({REF.format(1): issue(ca, "x")}),
        NOW + dt.timedelta(days=30),
    )
    assert verdict.level is Level.FAIL and "expired" in verdict.detail, verdict


def test_a_re_encrypting_pools_client_certificate_is_read_too() -> None:
    ca = make_ca()
    web = replace(pool("web", tls_enabled=True), tls_container_ref=REF.format(2))
    lb = load_balancer([listener("l", default_pool="web")], [web])
    assert certificate_hop(lb, Containers({REF.format(2): issue(ca, "c")}), NOW).level is Level.OK
    verdict = certificate_hop(lb, Containers({}), NOW)
    assert verdict.level is Level.FAIL
    assert verdict.detail == f"pool {web.id}: {REF.format(2)} cannot be read (not found)"


def test_every_unreadable_reference_is_counted_and_the_first_named() -> None:
    tls = replace(
        listener("l", LP.TERMINATED_HTTPS, 443),
        default_tls_container_ref=REF.format(3),
        sni_container_refs=(REF.format(4), REF.format(5)),
    )
    verdict = certificate_hop(load_balancer([tls]), Containers({}), NOW)
    assert verdict.level is Level.FAIL and REF.format(3) in verdict.detail
    assert verdict.detail.endswith("(and 2 more)")
