"""The metadata service answers signed requests only, and the agent's signer gets there.

Direct requests: a missing, wrong or borrowed signature is 403, a project that is not the
instance's is 403, an unknown instance 404; the secret and signatures never reach the
log. Through the agent's forwarder over real HTTP (uvicorn): an instance gets its own
documents whatever identity headers it forges, and an address with no port gets 404.
"""

from __future__ import annotations

from typing import Any

import pytest

from lbaas.metadata import signing
from lbaas.metadata.proxy import (
    HttpUpstream,
    MetadataForwarder,
    StaticPortView,
    bound_ports,
)
from tests.api.resource_base import assert_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.control_plane import asgi_app
from tests.support.served_app import served

SECRET = "metadata-test-secret-0123456789abcdef"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"metadata": {"shared_secret": SECRET}}


def _port(api: Api, device: str, address: str, **fields: Any) -> dict[str, Any]:
    network = api.get(f"/v2/subnets/{LOOPBACK_SUBNET}").json()["subnet"]["network_id"]
    body = {
        "network_id": network,
        "device_id": device,
        "device_owner": "compute:nova",
        "binding:host_id": "h1",
        "fixed_ips": [{"ip_address": address}],
        **fields,
    }
    reply = api.post("/v2.0/ports", json={"port": body})
    assert reply.status_code == 201, reply.text
    port: dict[str, Any] = reply.json()["port"]
    return port


def _signed(instance: str, tenant: str, secret: str = SECRET) -> dict[str, str]:
    return {
        signing.INSTANCE_ID: instance,
        signing.SIGNATURE: signing.sign(secret.encode(), instance),
        signing.TENANT_ID: tenant,
    }


@pytest.fixture
def instances(api: Api) -> list[dict[str, Any]]:
    return [
        _port(api, "vm-1", "127.0.10.70", dns_name="web-1"),
        _port(api.as_("p-beta", "member"), "vm-2", "127.0.10.71"),
    ]


def test_a_signed_request_gets_its_instance(api: Api, instances: Any) -> None:
    client = api.client
    doc = client.get("/openstack/latest/meta_data.json", headers=_signed("vm-1", "p-alpha"))
    assert doc.status_code == 200, doc.text
    assert (doc.json()["uuid"], doc.json()["hostname"]) == ("vm-1", "web-1")
    ec2 = {
        key: client.get(f"/latest/meta-data/{key}", headers=_signed("vm-2", "p-beta")).text
        for key in ("instance-id", "hostname", "local-ipv4")
    }
    assert ec2 == {
        "instance-id": "vm-2",
        "hostname": "host-127-0-10-71",
        "local-ipv4": "127.0.10.71",
    }
    index = client.get("/latest/meta-data/", headers=_signed("vm-1", "p-alpha")).text
    assert set(index.split("\n")) >= {"instance-id", "hostname", "local-ipv4"}
    assert_fault(client.get("/latest/meta-data/nope", headers=_signed("vm-1", "p-alpha")), 404)


def test_unsigned_or_forged_requests_are_refused(
    api: Api, instances: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = api.client
    path = "/openstack/latest/meta_data.json"
    borrowed = {**_signed("vm-1", "p-alpha"), signing.INSTANCE_ID: "vm-2"}
    wrong_key = _signed("vm-1", "p-alpha", secret="another-secret-0123456789abcdefgh")
    for headers in (
        {},
        {signing.INSTANCE_ID: "vm-1", signing.TENANT_ID: "p-alpha"},
        borrowed,
        wrong_key,
        _signed("vm-1", "p-beta"),  # right signature, not the instance's project
    ):
        assert_fault(client.get(path, headers=headers), 403)
    assert_fault(client.get(path, headers=_signed("vm-404", "p-alpha")), 404)
    assert SECRET not in caplog.text
    assert signing.sign(SECRET.encode(), "vm-1") not in caplog.text


def test_the_agent_signer_forwards_over_http(
    api: Api, admin: Api, plane: Any, instances: Any
) -> None:
    view = StaticPortView(bound_ports(admin.get("/v2.0/ports").json()["ports"]))
    network = instances[0]["network_id"]
    with served(asgi_app(plane)) as url:
        upstream = HttpUpstream(url)
        try:
            proxy = MetadataForwarder(view, SECRET.encode(), upstream)
            forged = _signed("vm-2", "p-beta")  # vm-1 pretending to be vm-2
            reply = proxy.handle(
                network, "127.0.10.70", "GET", "/latest/meta-data/instance-id", forged
            )
            assert (reply.status, reply.body) == (200, b"vm-1")
            other = proxy.handle(network, "127.0.10.71", "GET", "/latest/meta-data/hostname", {})
            assert (other.status, other.body) == (200, b"host-127-0-10-71")
            stranger = proxy.handle(network, "127.0.10.99", "GET", "/latest/meta-data/", {})
            assert stranger.status == 404
            unsigned = upstream.send(
                "GET", "/latest/meta-data/instance-id", forged | {signing.SIGNATURE: "0" * 64}
            )
            assert unsigned.status == 403
        finally:
            upstream.close()
