"""The agent's metadata signer, against a fake upstream and an in-memory port view.

(network, source address) names the port: two networks with the same address name two
instances. Identity headers a client sends are dropped and replaced by signed ones; a
source with no port gets 404 and nothing is forwarded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from lbaas.metadata import signing
from lbaas.metadata.base import BoundPort, UpstreamReply
from lbaas.metadata.proxy import MetadataForwarder, StaticPortView

SECRET = b"s" * 32
A = BoundPort("net-a", "10.0.0.5", "vm-a", "p-alpha")
B = BoundPort("net-b", "10.0.0.5", "vm-b", "p-beta")


class RecordingUpstream:
    """Stands for the metadata service: records what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, str]]] = []

    def send(self, method: str, path: str, headers: Mapping[str, str]) -> UpstreamReply:
        self.sent.append((method, path, dict(headers)))
        return UpstreamReply(200, {}, b"ok")


@pytest.fixture
def upstream() -> RecordingUpstream:
    return RecordingUpstream()


@pytest.fixture
def proxy(upstream: RecordingUpstream) -> MetadataForwarder:
    return MetadataForwarder(StaticPortView([A, B]), SECRET, upstream)


def test_the_network_and_source_name_the_instance(
    proxy: MetadataForwarder, upstream: RecordingUpstream
) -> None:
    for port in (A, B):
        reply = proxy.handle(port.network_id, "10.0.0.5", "GET", "/latest/meta-data/", {})
        assert reply.status == 200
        _, _, headers = upstream.sent[-1]
        assert headers[signing.INSTANCE_ID] == port.device_id
        assert headers[signing.TENANT_ID] == port.project_id
        assert signing.verifies(SECRET, port.device_id, headers[signing.SIGNATURE])
        assert headers[signing.FORWARDED_FOR] == "10.0.0.5"


def test_identity_headers_from_the_client_are_replaced(
    proxy: MetadataForwarder, upstream: RecordingUpstream
) -> None:
    forged = {
        "x-instance-id": "vm-b",
        "X-Instance-ID-Signature": signing.sign(b"guess", "vm-b"),
        "X-TENANT-ID": "p-beta",
        "X-Forwarded-For": "10.0.0.99",
        "Accept": "*/*",
    }
    proxy.handle("net-a", "10.0.0.5", "GET", "/openstack/latest/meta_data.json", forged)
    _, path, headers = upstream.sent[-1]
    assert path == "/openstack/latest/meta_data.json"
    lowered = {k.lower(): v for k, v in headers.items()}
    assert len(lowered) == len(headers)  # no second spelling of a header survives
    assert lowered["x-instance-id"] == "vm-a"
    assert lowered["x-tenant-id"] == "p-alpha"
    assert lowered["x-forwarded-for"] == "10.0.0.5"
    assert lowered["accept"] == "*/*"


def test_a_source_without_a_port_is_404_and_logged(
    proxy: MetadataForwarder, upstream: RecordingUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        reply = proxy.handle("net-a", "10.0.0.6", "GET", "/latest/meta-data/", {})
        other_net = proxy.handle("net-c", "10.0.0.5", "GET", "/latest/meta-data/", {})
    assert (reply.status, other_net.status) == (404, 404)
    assert upstream.sent == []
    assert "10.0.0.6" in caplog.text and "net-c" in caplog.text


def test_a_full_sync_replaces_the_view(upstream: RecordingUpstream) -> None:
    view = StaticPortView([A])
    proxy = MetadataForwarder(view, SECRET, upstream)
    view.replace([B])
    assert proxy.handle("net-a", "10.0.0.5", "GET", "/", {}).status == 404
    assert proxy.handle("net-b", "10.0.0.5", "GET", "/", {}).status == 200


def test_signatures_verify_only_for_their_instance_and_secret() -> None:
    signature = signing.sign(SECRET, "vm-a")
    assert signing.verifies(SECRET, "vm-a", signature)
    assert not signing.verifies(SECRET, "vm-b", signature)
    assert not signing.verifies(b"t" * 32, "vm-a", signature)
    assert not signing.verifies(SECRET, "vm-a", "")
