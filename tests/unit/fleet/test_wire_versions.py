"""Both ends state their wire version (``lbaas.wire.versions``): the agent app on every
answer, and in ``/v1/info`` only to a controller that stated one; the client records the
agent's, holds a spec needing a newer agent's feature, and ``PeerVersions`` logs the switch
once the last older agent is gone, with the metric showing it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.errors import TemporaryError
from lbaas.fleet.agent_app import create_agent_app
from lbaas.fleet.client import AgentClient, WireVersionTooOld
from lbaas.fleet.client_l4 import L4AgentClient
from lbaas.fleet.peer_versions import PeerVersions
from lbaas.host.recording import RecordingHostOps
from lbaas.metrics.wire_versions import WireVersionCollector
from lbaas.wire.amphora import (
    AgentInfo,
    AmphoraSpec,
    AmphoraStatus,
)
from lbaas.wire.datapath import UdpListener
from lbaas.wire.l4 import L4ListenerSpec, L4ServiceSpec, L4ServiceStatus
from lbaas.wire.versions import HEADER, UNSTATED, WIRE_VERSION, stated
from tests.support.amphora_specs import minimal_amphora_spec

INFO = AgentInfo(mode="loopback", haproxy_version="test", amphora_root="/x")


def _agent_app(tmp_path: Path) -> TestClient:
    registry = AmphoraRegistry(tmp_path, RecordingHostOps(allow_namespaces=False))
    return TestClient(create_agent_app(registry, lambda: INFO))


def test_the_agent_states_its_version_on_every_answer(tmp_path: Path) -> None:
    with _agent_app(tmp_path) as agent:
        found = agent.get("/v1/amphorae/nobody")
        info = agent.get("/v1/info")
    assert found.status_code == 404 and found.headers[HEADER] == str(WIRE_VERSION)
    assert info.headers[HEADER] == str(WIRE_VERSION)


def test_info_names_the_version_only_to_a_controller_that_stated_one(tmp_path: Path) -> None:
    with _agent_app(tmp_path) as agent:
        to_old = agent.get("/v1/info").json()
        to_new = agent.get("/v1/info", headers={HEADER: "2"}).json()
    assert "wire_version" not in to_old  # version 1's AgentInfo refuses unknown fields
    assert to_new["wire_version"] == WIRE_VERSION


@pytest.mark.parametrize(
    ("value", "version"), [(None, UNSTATED), ("2", 2), (" 3 ", 3), ("x", UNSTATED), ("0", 1)]
)
def test_what_a_header_states(value: str | None, version: int) -> None:
    assert stated(value) == version


def _agent(version: int | None, seen: list[httpx.Request]) -> httpx.MockTransport:
    """An agent answering 200 to everything; ``version`` None: one of version 1."""
    headers = {} if version is None else {HEADER: str(version)}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/info":
            body = INFO.model_dump(exclude={"wire_version"})
            if version is not None:
                body["wire_version"] = version
            return httpx.Response(200, json=body, headers=headers)
        if request.url.path.startswith("/v1/l4/"):
            status = L4ServiceStatus(loadbalancer_id="lb", applied_version=1)
            return httpx.Response(200, content=status.model_dump_json(), headers=headers)
        status = AmphoraStatus(amphora_id="a1", applied_version=1, running=True)
        return httpx.Response(200, content=status.model_dump_json(), headers=headers)

    return httpx.MockTransport(handler)


def test_the_client_states_its_version_and_records_the_agents() -> None:
    seen: list[httpx.Request] = []
    versions = PeerVersions()
    with AgentClient(
        "https://a", transport=_agent(None, seen), peer="host-1", versions=versions
    ) as client:
        assert client.peer_version is None
        assert client.wire_version() == 1  # asked: GET /v1/info
        assert not client.speaks("certificate_renewal")
    assert seen[0].headers[HEADER] == str(WIRE_VERSION)
    assert versions.snapshot() == {"host-1": 1}


def _l4_spec(member_down: str) -> L4ServiceSpec:
    listener = L4ListenerSpec.model_validate(
        {
            "id": "l1",
            "protocol": "tcp",
            "port": 80,
            "hash_key": "five_tuple",
            "table_size": 7,
            "member_down": member_down,
        }
    )
    return L4ServiceSpec(version=1, loadbalancer_id="lb", vip="127.0.10.5", listeners=(listener,))


def _l4_client(version: int | None, seen: list[httpx.Request]) -> L4AgentClient:
    return L4AgentClient("https://a", transport=_agent(version, seen), peer="host-1")


def test_a_spec_needing_version_2_is_held_for_an_older_agent() -> None:
    seen: list[httpx.Request] = []
    with _l4_client(None, seen) as client, pytest.raises(WireVersionTooOld) as held:
        client.put_l4(_l4_spec("cut"))
    assert [r.method for r in seen if r.url.path.startswith("/v1/l4")] == []  # nothing sent
    assert "agent host-1 speaks wire version 1" in held.value.operator_message
    assert "held until that agent is upgraded" in held.value.operator_message


def test_keep_still_reaches_an_older_agent_in_its_language() -> None:
    seen: list[httpx.Request] = []
    with _l4_client(None, seen) as client:
        client.put_l4(_l4_spec("keep"))
    sent = json.loads(seen[-1].content)
    assert "member_down" not in sent["listeners"][0]


def test_the_same_spec_goes_to_an_agent_of_version_2() -> None:
    seen: list[httpx.Request] = []
    with _l4_client(2, seen) as client:
        client.put_l4(_l4_spec("reroute"))
    assert json.loads(seen[-1].content)["listeners"][0]["member_down"] == "reroute"


def test_a_held_spec_goes_once_the_agent_says_it_was_upgraded() -> None:
    seen: list[httpx.Request] = []
    version: list[int | None] = [None]

    def handler(request: httpx.Request) -> httpx.Response:
        return _agent(version[0], seen).handle_request(request)

    with L4AgentClient("https://a", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(WireVersionTooOld):
            client.put_l4(_l4_spec("cut"))
        version[0] = 2  # the agent restarted on the new release
        client.put_l4(_l4_spec("cut"))
    assert seen[-1].method == "PUT"


def test_the_switch_is_logged_once_when_the_last_older_agent_is_gone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    versions = PeerVersions()
    caplog.set_level(logging.INFO, logger="lbaas.fleet.peer_versions")
    versions.record("a", 1)
    versions.record("b", 2)
    versions.record("a", 1)  # heard again: nothing new to say
    assert versions.in_use() == 1 and versions.older() == ["a"]
    versions.record("a", 2)  # upgraded
    versions.record("b", 2)
    switched = [r for r in caplog.records if "every agent speaks wire version 2" in r.message]
    assert len(switched) == 1 and versions.in_use() == 2
    older = [r for r in caplog.records if "agent a speaks wire version 1" in r.message]
    assert len(older) == 1


def test_an_older_agent_no_longer_enrolled_is_forgotten() -> None:
    versions = PeerVersions()
    versions.record("gone", 1)
    versions.record("b", 2)
    versions.retain(["b"])
    assert versions.snapshot() == {"b": 2} and versions.in_use() == 2


def test_an_agent_not_heard_for_long_is_forgotten(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    versions = PeerVersions(forget_after=600, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="lbaas.fleet.peer_versions")
    versions.record("deleted", 1)
    versions.record("b", 2)
    now[0] = 500.0
    versions.record("b", 2)  # heartbeats of b go on; "deleted" is silent
    assert versions.in_use() == 1
    now[0] = 700.0
    versions.record("b", 2)
    assert versions.snapshot() == {"b": 2}
    assert [r.message for r in caplog.records if "every agent" in r.message] == [
        "every agent speaks wire version 2 (1 heard from): its features are in use"
    ]


def _scrape(collector: WireVersionCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_the_metric_shows_each_agents_version_and_the_one_in_use() -> None:
    versions = PeerVersions()
    versions.record("host-1", 1)
    versions.record("host-2", 2)
    text = _scrape(WireVersionCollector(versions))
    assert f"lbaas_wire_version {WIRE_VERSION}.0" in text
    assert 'lbaas_agent_wire_version{host="host-1"} 1.0' in text
    assert 'lbaas_agent_wire_version{host="host-2"} 2.0' in text
    assert "lbaas_agent_wire_version_in_use 1.0" in text
    versions.record("host-1", 2)
    assert "lbaas_agent_wire_version_in_use 2.0" in _scrape(WireVersionCollector(versions))


def test_an_unknown_agent_is_not_asked_when_a_spec_needs_nothing_new() -> None:
    seen: list[httpx.Request] = []
    with _l4_client(None, seen) as client:
        client.put_l4(_l4_spec("keep"))
    assert [r.url.path for r in seen] == ["/v1/l4/lb"]


def _amphora_spec(**udp: object) -> AmphoraSpec:
    fields = {"listener_id": "l-dns", "port": 53, "table_size": 251, **udp}
    listener = UdpListener.model_validate(fields)
    return minimal_amphora_spec((listener,))


@pytest.mark.parametrize(
    "udp", [{"member_down": "cut"}, {"connection_limit": 100}, {"idle_timeout": 30}]
)
def test_an_amphora_spec_needing_version_2_is_held_for_an_older_agent(
    udp: dict[str, object],
) -> None:
    seen: list[httpx.Request] = []
    with AgentClient("https://a", transport=_agent(None, seen)) as old:
        with pytest.raises(WireVersionTooOld):
            old.put_amphora("a1", _amphora_spec(**udp))
    assert [r.method for r in seen] == ["GET", "GET"]  # asked, asked again, nothing sent
    with AgentClient("https://a", transport=_agent(2, seen)) as new:
        new.put_amphora("a1", _amphora_spec(**udp))
    sent = json.loads(seen[-1].content)["udp_listeners"][0]
    assert {key: sent[key] for key in udp} == udp


def test_a_server_error_without_a_version_is_not_taken_for_an_older_agent() -> None:
    answers = iter(
        [
            httpx.Response(500, text="Internal Server Error"),
            httpx.Response(204, headers={HEADER: "2"}),
        ]
    )
    with AgentClient("https://a", transport=httpx.MockTransport(lambda _: next(answers))) as client:
        with pytest.raises(TemporaryError):
            client.delete_amphora("a1")
        assert client.peer_version is None
        client.delete_amphora("a1")
        assert client.peer_version == 2
