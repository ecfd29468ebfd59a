"""AgentClient translates every httpx outcome into lbaas's error tree (MockTransport)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from lbaas.errors import (
    AgentUnreachable,
    InvalidRenderedConfig,
    PermanentError,
    TemporaryError,
)
from lbaas.fleet.client import AgentClient
from lbaas.wire.amphora import AmphoraSpec, AmphoraStatus, ErrorBody
from tests.support.amphora_specs import minimal_amphora_spec

SPEC = minimal_amphora_spec()


def _client(handler: Callable[[httpx.Request], httpx.Response]) -> AgentClient:
    return AgentClient("https://agent:9443", transport=httpx.MockTransport(handler))


def _error(status: int, kind: str, detail: str | None = None) -> httpx.Response:
    body = ErrorBody(error=kind, message=f"{kind} happened", detail=detail)
    return httpx.Response(status, content=body.model_dump_json())


def test_put_sends_the_spec_and_reads_the_status() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status = AmphoraStatus(amphora_id="a1", applied_version=1, running=True)
        return httpx.Response(200, content=status.model_dump_json())

    with _client(handler) as client:
        status = client.put_amphora("a1", SPEC)
    assert status.running and status.applied_version == 1
    assert seen[0].method == "PUT" and seen[0].url.path == "/v1/amphorae/a1"
    assert AmphoraSpec.model_validate_json(seen[0].content) == SPEC


def test_get_of_unknown_amphora_is_none_and_delete_is_quiet() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return _error(404, "not_found")
        return httpx.Response(204)

    with _client(handler) as client:
        assert client.get_amphora("a1") is None
        client.delete_amphora("a1")


def test_transport_errors_mean_unreachable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with _client(handler) as client, pytest.raises(AgentUnreachable) as caught:
        client.get_amphora("a1")
    assert "connection refused" in (caught.value.operator_message or "")


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (_error(422, "invalid_config", "[ALERT] bad"), InvalidRenderedConfig),
        (_error(409, "stale_version"), PermanentError),
        (_error(400, "bad_request"), PermanentError),
        (_error(500, "host"), TemporaryError),
        (httpx.Response(503, text="busy"), AgentUnreachable),
    ],
)
def test_error_statuses_are_translated(response: httpx.Response, expected: type[Exception]) -> None:
    with _client(lambda request: response) as client, pytest.raises(expected) as caught:
        client.put_amphora("a1", SPEC)
    if expected is InvalidRenderedConfig:
        assert "[ALERT] bad" in (caught.value.operator_message or "")  # type: ignore[attr-defined]
    if expected is PermanentError:
        assert not isinstance(caught.value, InvalidRenderedConfig)
