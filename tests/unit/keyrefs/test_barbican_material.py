"""Reading references from the operator's Barbican: what is fetched, with which headers, and
what is refused without a request. The Barbican here is ``httpx.MockTransport`` answering
Barbican's v1 shapes (passed in, nothing patched); the end-to-end test with another lbaas
key manager standing in for Barbican is ``tests/e2e/test_barbican_references.py``."""

from __future__ import annotations

import httpx
import pytest

from lbaas.keyrefs.barbican_material import BarbicanMaterial, RoutedMaterial
from lbaas.keyrefs.base import KeyMaterial, Unresolvable

BASE = "https://barbican.example.com:9311"
# Fixed ids: they appear in parametrized test ids, which every xdist worker must agree on.
CERT_ID = "6b0f3a52-2d0e-4c4e-9a51-0c2b6f1d7e01"
KEY_ID = "6b0f3a52-2d0e-4c4e-9a51-0c2b6f1d7e02"
CONTAINER_ID = "6b0f3a52-2d0e-4c4e-9a51-0c2b6f1d7e03"
SECRETS = {CERT_ID: (b"CERT-PEM", "text/plain"), KEY_ID: (b"\x00KEY-DER", "application/pkcs8")}


class FakeBarbican:
    """Barbican's GETs for one project's container of two secrets; records each request."""

    def __init__(self, project: str = "tenant-a") -> None:
        self.project = project
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        if request.headers.get("X-Project-Id") != self.project:
            return httpx.Response(404)
        parts = request.url.path.strip("/").split("/")
        if parts[:2] == ["v1", "containers"] and parts[2:] == [CONTAINER_ID]:
            refs = [
                {"name": "certificate", "secret_ref": f"{BASE}/v1/secrets/{CERT_ID}"},
                {"name": "private_key", "secret_ref": f"{BASE}/v1/secrets/{KEY_ID}"},
            ]
            return httpx.Response(200, json={"type": "certificate", "secret_refs": refs})
        if parts[:2] == ["v1", "secrets"] and parts[2] in SECRETS:
            payload, content_type = SECRETS[parts[2]]
            if parts[3:] == ["payload"]:
                assert request.headers["Accept"] == content_type
                return httpx.Response(200, content=payload)
            return httpx.Response(200, json={"content_types": {"default": content_type}})
        return httpx.Response(404)


def _material(barbican: FakeBarbican) -> BarbicanMaterial:
    client = httpx.Client(transport=httpx.MockTransport(barbican))
    return BarbicanMaterial((BASE,), lambda project: {"X-Project-Id": project}, client)


def test_a_container_is_read_member_by_member_in_each_secrets_content_type() -> None:
    barbican = FakeBarbican()
    members = _material(barbican).container("tenant-a", f"{BASE}/v1/containers/{CONTAINER_ID}")
    assert members == {"certificate": b"CERT-PEM", "private_key": b"\x00KEY-DER"}
    assert all(r.headers["X-Project-Id"] == "tenant-a" for r in barbican.seen)
    assert len(barbican.seen) == 5  # the container, then metadata and payload per secret


def test_another_projects_secret_is_unresolvable_with_the_status_only() -> None:
    with pytest.raises(Unresolvable, match="HTTP 404") as refused:
        _material(FakeBarbican()).secret("tenant-b", f"{BASE}/v1/secrets/{CERT_ID}")
    assert "PEM" not in str(refused.value)
    assert not refused.value.transient  # asking again will not help


@pytest.mark.parametrize(("status", "transient"), [(503, True), (429, True), (403, False)])
def test_an_overloaded_barbican_is_transient_a_refusal_is_not(status: int, transient: bool) -> None:
    client = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(status)))
    material = BarbicanMaterial((BASE,), lambda project: {}, client)
    with pytest.raises(Unresolvable, match=f"HTTP {status}") as refused:
        material.secret("tenant-a", f"{BASE}/v1/secrets/{CERT_ID}")
    assert refused.value.transient is transient


@pytest.mark.parametrize(
    "ref",
    [
        f"https://barbican.example.com:9311.evil.example/v1/secrets/{CERT_ID}",
        f"https://other.example.com/v1/secrets/{CERT_ID}",
        f"{BASE}/v1/containers/{CONTAINER_ID}",  # a container where a secret is wanted
        f"{BASE}/v1/secrets/not-a-uuid",
    ],
)
def test_what_is_not_a_secret_of_the_configured_barbican_is_never_requested(ref: str) -> None:
    barbican = FakeBarbican()
    with pytest.raises(Unresolvable):
        _material(barbican).secret("tenant-a", ref)
    assert barbican.seen == []


def test_a_container_naming_a_secret_elsewhere_stops_before_fetching_it() -> None:
    seen: list[str] = []
    elsewhere = f"http://169.254.169.254/v1/secrets/{CERT_ID}"

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        refs = [{"name": "certificate", "secret_ref": elsewhere}]
        return httpx.Response(200, json={"secret_refs": refs})

    client = httpx.Client(transport=httpx.MockTransport(answer))
    material = BarbicanMaterial((BASE,), lambda project: {}, client)
    with pytest.raises(Unresolvable, match="not a secret of the configured Barbican"):
        material.container("tenant-a", f"{BASE}/v1/containers/{CONTAINER_ID}")
    assert seen == [f"{BASE}/v1/containers/{CONTAINER_ID}"]


def test_an_unreachable_barbican_is_unresolvable_naming_the_error_kind() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.Client(transport=httpx.MockTransport(refuse))
    material = BarbicanMaterial((BASE,), lambda project: {}, client)
    with pytest.raises(Unresolvable, match=r"not reachable \(ConnectError\)") as refused:
        material.secret("tenant-a", f"{BASE}/v1/secrets/{CERT_ID}")
    assert refused.value.transient


def test_an_answer_larger_than_certificate_material_is_not_read_whole() -> None:
    def huge(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/payload"):
            return httpx.Response(200, content=b"x" * 4096)
        return httpx.Response(200, json={"content_types": {"default": "text/plain"}})

    client = httpx.Client(transport=httpx.MockTransport(huge))
    material = BarbicanMaterial((BASE,), lambda project: {}, client, max_bytes=1024)
    with pytest.raises(Unresolvable, match="larger than 1024 bytes") as refused:
        material.secret("tenant-a", f"{BASE}/v1/secrets/{CERT_ID}")
    assert not refused.value.transient


class Local(KeyMaterial):
    def secret(self, project_id: str, ref: str) -> bytes:
        return b"local:" + ref.encode()

    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        return {"certificate": self.secret(project_id, ref)}


def test_references_outside_the_barbican_stay_local() -> None:
    routed = RoutedMaterial(Local(), _material(FakeBarbican()))
    local_ref = f"http://lbaas.example.com:9876/key-manager/v1/secrets/{CERT_ID}"
    assert routed.secret("tenant-a", local_ref) == b"local:" + local_ref.encode()
    assert routed.secret("tenant-a", f"{BASE}/v1/secrets/{CERT_ID}") == b"CERT-PEM"
