"""Calls to lbaas retried with backoff, and made idempotent by the ids they carry
(client.py), against a fake transport (httpx's MockTransport) passed in."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from lbaas_octavia_provider.client import LbaasClient, LbaasError, Unreachable
from lbaas_octavia_provider.settings import Settings

Handler = Callable[[httpx.Request], httpx.Response]


def _client(
    answers: list[httpx.Response | Exception],
    seen: list[httpx.Request],
    retry_seconds: float = 30.0,
) -> tuple[LbaasClient, list[float]]:
    waits: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    settings = Settings(url="http://lbaas.invalid", retry_seconds=retry_seconds)
    client = LbaasClient(settings, transport=httpx.MockTransport(handle), sleep=waits.append)
    return client, waits


def _fault(status: int, text: str) -> httpx.Response:
    return httpx.Response(status, json={"faultcode": "Client", "faultstring": text})


def test_connection_errors_and_busy_answers_are_retried_with_growing_waits() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        httpx.ConnectError("refused"),
        _fault(503, "Database busy, please try again."),
        _fault(409, "Load Balancer x is immutable and cannot be updated."),
        httpx.Response(201, json={"listener": {"id": "l"}}),
    ]
    client, waits = _client(answers, seen)
    client.write("POST", "/listeners", "p1", {"listener": {"id": "l"}})
    assert len(seen) == 4 and waits == [0.1, 0.2, 0.4]
    assert seen[-1].headers["X-Project-Id"] == "p1"
    assert seen[-1].headers["X-Roles"] == "admin"


def test_a_create_whose_id_exists_already_got_in() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        _fault(409, "Already an entity with that specified id.")
    ]
    client, _ = _client(answers, seen)
    client.write("POST", "/pools", None, {"pool": {"id": "p"}})
    assert len(seen) == 1


def test_a_refusal_is_not_retried_and_says_why() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        _fault(409, "Another member on this pool is already using ip address 192.0.2.1")
    ]
    client, waits = _client(answers, seen)
    with pytest.raises(LbaasError) as raised:
        client.write("POST", "/pools/p/members", None, {"member": {}})
    assert raised.value.status == 409 and "already using" in raised.value.fault
    assert waits == []


def test_a_delete_of_what_is_gone_is_done() -> None:
    seen: list[httpx.Request] = []
    client, _ = _client([_fault(404, "Not Found")], seen)
    client.write("DELETE", "/listeners/l")


def test_lbaas_away_for_longer_than_the_window_is_unreachable() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [httpx.ConnectError("refused")] * 50
    client, waits = _client(answers, seen, retry_seconds=0.0)
    with pytest.raises(Unreachable, match="lbaas.invalid"):
        client.read("/loadbalancers")
    assert len(seen) == 1 and waits == []
