"""The /v1 routes in-process: status codes and error bodies for each kind of answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_fakes import FakeRuntime, make_config, spec_fields
from fastapi.testclient import TestClient

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.errors import InvalidRenderedConfig
from lbaas.fleet.agent_app import create_agent_app
from lbaas.host.recording import RecordingHostOps
from lbaas.wire.amphora import AgentInfo, AmphoraStatus, ErrorBody


def _refuse_port_1(text: str) -> None:
    if ":1\n" in text:
        raise InvalidRenderedConfig("HAProxy refused it", "[ALERT] port 1")


@pytest.fixture
def client(tmp_path: Path, runtime: FakeRuntime) -> Iterator[TestClient]:
    host = RecordingHostOps(_refuse_port_1, allow_namespaces=False)
    manager = AmphoraRegistry(tmp_path, host, runtime_api=runtime.factory())

    def info() -> AgentInfo:
        return AgentInfo(
            mode="loopback",
            haproxy_version="test",
            amphora_root=str(tmp_path),
            amphorae=tuple(manager.amphora_ids()),
        )

    with TestClient(create_agent_app(manager, info)) as test_client:
        yield test_client


def _body(root: Path, version: int = 1, port: int = 8080) -> dict[str, object]:
    return {
        "version": version,
        "loadbalancer_id": "lb-1",
        **spec_fields(make_config(root / "amp-1", port=port)),
        "vip": {"address": "127.0.10.5", "subnet_cidr": "127.0.10.0/24", "network_id": "n"},
    }


def test_put_get_delete(client: TestClient, tmp_path: Path) -> None:
    put = client.put("/v1/amphorae/amp-1", json=_body(tmp_path))
    assert put.status_code == 200
    status = AmphoraStatus.model_validate(put.json())
    assert status.running and status.applied_version == 1
    got = client.get("/v1/amphorae/amp-1")
    assert got.status_code == 200 and got.json()["master_pid"] == status.master_pid
    assert client.get("/v1/info").json()["amphorae"] == ["amp-1"]
    assert client.delete("/v1/amphorae/amp-1").status_code == 204
    assert client.delete("/v1/amphorae/amp-1").status_code == 204
    missing = client.get("/v1/amphorae/amp-1")
    assert missing.status_code == 404 and ErrorBody.model_validate(missing.json())


def test_malformed_bodies_are_400(client: TestClient, tmp_path: Path) -> None:
    body = _body(tmp_path)
    for broken in (
        {**body, "version": -1},
        {**body, "surprise": 1},
        {k: v for k, v in body.items() if k != "vip"},
        {**body, "vip": {"address": "10.9.9.9", "subnet_cidr": "127.0.0.0/8", "network_id": "n"}},
    ):
        response = client.put("/v1/amphorae/amp-1", json=broken)
        assert response.status_code == 400, broken
        assert ErrorBody.model_validate(response.json()).error == "bad_request"
    assert client.put("/v1/amphorae/amp-1", content=b"{not json").status_code == 400


def test_a_spec_of_another_format_is_refused_clearly(client: TestClient, tmp_path: Path) -> None:
    text_only = {
        k: v for k, v in _body(tmp_path).items() if k not in ("spec_format", "haproxy_facts")
    }
    for body, found in ((text_only, "1"), ({**_body(tmp_path), "spec_format": 3}, "3")):
        response = client.put("/v1/amphorae/amp-1", json=body)
        assert response.status_code == 400
        detail = response.json()["detail"]
        assert f"amphora spec format {found} cannot be read by this agent" in detail
        assert "reads format 2" in detail
    assert client.get("/v1/amphorae/amp-1").status_code == 404  # nothing was applied


def test_bad_amphora_id_is_400(client: TestClient, tmp_path: Path) -> None:
    assert client.put("/v1/amphorae/-x", json=_body(tmp_path)).status_code == 400
    assert client.get("/v1/amphorae/a%2F..").status_code in (400, 404)


def test_loopback_agent_refuses_other_vips(client: TestClient, tmp_path: Path) -> None:
    body = _body(tmp_path)
    body["vip"] = {"address": "10.0.0.5", "subnet_cidr": "10.0.0.0/24", "network_id": "n"}
    response = client.put("/v1/amphorae/amp-1", json=body)
    assert response.status_code == 400 and "loopback" in response.json()["message"]


def test_stale_version_is_409(client: TestClient, tmp_path: Path) -> None:
    assert client.put("/v1/amphorae/amp-1", json=_body(tmp_path, version=2)).status_code == 200
    response = client.put("/v1/amphorae/amp-1", json=_body(tmp_path, version=1))
    assert response.status_code == 409 and response.json()["error"] == "stale_version"


def test_refused_config_is_422_with_haproxy_output(client: TestClient, tmp_path: Path) -> None:
    response = client.put("/v1/amphorae/amp-1", json=_body(tmp_path, port=1))
    assert response.status_code == 422
    error = ErrorBody.model_validate(response.json())
    assert error.error == "invalid_config" and error.detail == "[ALERT] port 1"
    status = client.get("/v1/amphorae/amp-1").json()
    assert status["last_error"] == "[ALERT] port 1" and not status["running"]
