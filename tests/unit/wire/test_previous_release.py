"""What this release says to the previous one (6824d05, wire version 1) is read by that
release's own code, run in a child process: a new agent's answers and heartbeat by an old
controller, a new controller's specs (in version 1's language) by an old agent, and a
schema expanded by this release by the old schema check."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.db.engine import Database
from lbaas.db.migrate import current_revision, upgrade_database, upgrade_phase
from lbaas.fleet.agent_app import create_agent_app
from lbaas.fleet.client import AgentClient
from lbaas.fleet.client_l4 import L4AgentClient
from lbaas.host.recording import RecordingHostOps
from lbaas.model.fleet import HostAnnouncement
from lbaas.wire.amphora import AgentInfo, AmphoraSpec, AmphoraStatus, HaproxyFacts, VipSpec
from lbaas.wire.datapath import UdpListener, UdpMember
from lbaas.wire.heartbeat.host_codec import to_host_payload
from lbaas.wire.l4 import L4ListenerSpec, L4ServiceSpec, L4ServiceStatus
from tests.support.old_release import extracted, run_old

_VALIDATE = """
import importlib
ANSWER = []
for where, body in GIVEN:
    module, name = where.split(":")
    try:
        getattr(importlib.import_module(module), name).model_validate_json(body)
        ANSWER.append("read")
    except Exception as exc:
        ANSWER.append(str(exc)[:400])
"""


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = extracted(tmp_path_factory.mktemp("previous-release"))
    if root is None:
        pytest.skip("no git history of the previous release in this checkout")
    return root


def _agent_answers(tmp_path: Path) -> list[tuple[str, str]]:
    """What this agent answers a controller that states no version."""
    info = AgentInfo(mode="netns", haproxy_version="2.8", amphora_root="/x", wire_version=2)
    registry = AmphoraRegistry(tmp_path, RecordingHostOps(allow_namespaces=False))
    with TestClient(create_agent_app(registry, lambda: info)) as agent:
        answers = [
            ("lbaas.wire.amphora:AgentInfo", agent.get("/v1/info").text),
            ("lbaas.wire.amphora:ErrorBody", agent.get("/v1/amphorae/nobody").text),
        ]
    return answers


def _sent(client_type: type[AgentClient], act: str, spec: object) -> str:
    """The body ``client_type``'s ``act`` sends an agent that states no version."""
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        if "/l4/" in request.url.path:
            return httpx.Response(200, json=L4ServiceStatus(loadbalancer_id="lb").model_dump())
        status = AmphoraStatus(amphora_id="a1", applied_version=1, running=True)
        return httpx.Response(200, json=status.model_dump())

    with client_type("https://old", transport=httpx.MockTransport(handler)) as client:
        if act == "amphora":
            assert isinstance(spec, AmphoraSpec)
            client.put_amphora("a1", spec)
        else:
            assert isinstance(client, L4AgentClient) and isinstance(spec, L4ServiceSpec)
            client.put_l4(spec)
    return bodies[-1].decode()


def _controller_bodies() -> list[tuple[str, str]]:
    udp = UdpListener(
        listener_id="l-dns", port=53, table_size=251, members=(UdpMember(key="m1", address="10.2.0.11", port=5353),)
    )  # fmt: skip
    amphora = AmphoraSpec(
        spec_format=2,
        version=3,
        loadbalancer_id="lb",
        haproxy_config="global\n",
        haproxy_facts=HaproxyFacts(runtime_socket="/x/stats.sock", fixed_digest="test:x"),
        vip=VipSpec(address="127.0.10.5", subnet_cidr="127.0.10.0/24", network_id="n"),
        udp_listeners=(udp,),
    )
    listener = L4ListenerSpec(id="l1", protocol="tcp", port=80, hash_key="five_tuple", table_size=7)
    l4 = L4ServiceSpec(version=1, loadbalancer_id="lb", vip="127.0.10.5", listeners=(listener,))
    return [
        ("lbaas.wire.amphora:AmphoraSpec", _sent(AgentClient, "amphora", amphora)),
        ("lbaas.wire.l4:L4ServiceSpec", _sent(L4AgentClient, "l4", l4)),
    ]


def test_an_old_controller_reads_this_agents_answers(old: Path, tmp_path: Path) -> None:
    assert run_old(old, _VALIDATE, _agent_answers(tmp_path)) == ["read", "read"]


def test_an_old_agent_reads_this_controllers_specs_in_its_language(old: Path) -> None:
    assert run_old(old, _VALIDATE, _controller_bodies()) == ["read", "read"]


def test_an_old_controller_reads_this_agents_host_heartbeat(old: Path) -> None:
    seen = HostAnnouncement(
        host_id="h1", address="127.0.0.1", port=9443, zone="z", capacity=10,
        amphorae=("a1",), vrrp=(("a1", "MASTER"),), cert_expiration=1.9e9, wire_version=2,
    )  # fmt: skip
    snippet = (
        "from lbaas.wire.heartbeat.host_codec import from_host_payload\n"
        "ANSWER = from_host_payload(GIVEN, 'host:h1').host_id"
    )
    assert run_old(old, snippet, json.loads(json.dumps(to_host_payload(seen)))) == "h1"


_OLD_SCHEMA = """
from lbaas.db.engine import Database
from lbaas.db.schema_check import schema_mismatch
from lbaas.db.migrate import upgrade_database
database = Database(GIVEN)
ANSWER = {"mismatch": schema_mismatch(database.engine)}
try:
    upgrade_database(database)
    ANSWER["upgrade"] = "done"
except Exception as exc:
    ANSWER["upgrade"] = type(exc).__name__ + ": " + str(exc)
"""


def test_old_processes_run_on_the_expanded_schema_but_cannot_migrate_it(
    old: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'expanded.sqlite'}"
    database = Database(url)
    upgrade_phase(database, "expand")  # what a rolling upgrade gives the old processes
    database.dispose()
    answer = run_old(old, _OLD_SCHEMA, url)
    assert answer["mismatch"] is None  # the api, worker and health processes start
    # `serve`, `enrol`, `network create-subnet` of the old release migrate at start-up,
    # and Alembic refuses a revision its scripts do not know: a finding, documented.
    assert "0011_applied_version" in answer["upgrade"]


def test_this_release_contraction_leaves_old_processes_able_to_start(
    old: Path, tmp_path: Path
) -> None:
    """Contracting early is an operator's mistake, not an outage: 0012 drops an index."""
    url = f"sqlite:///{tmp_path / 'contracted.sqlite'}"
    database = Database(url)
    upgrade_database(database)
    assert current_revision(database) == "0012_drop_lb_project_index"
    database.dispose()
    assert run_old(old, _OLD_SCHEMA, url)["mismatch"] is None


_OLD_SPECS = """
from lbaas.wire.amphora import AmphoraSpec, HaproxyFacts, VipSpec
from lbaas.wire.datapath import UdpListener, UdpMember
from lbaas.wire.l4 import L4ListenerSpec, L4ServiceSpec
udp = UdpListener(listener_id="l-dns", port=53, table_size=251,
                  members=(UdpMember(key="m1", address="10.2.0.11", port=5353),))
amphora = AmphoraSpec(
    spec_format=2, version=3, loadbalancer_id="lb", haproxy_config="global\\n",
    haproxy_facts=HaproxyFacts(runtime_socket="/x/stats.sock", fixed_digest="test:x"),
    vip=VipSpec(address="127.0.10.5", subnet_cidr="127.0.10.0/24", network_id="n"),
    udp_listeners=(udp,),
)
listener = L4ListenerSpec(id="l1", protocol="udp", port=53, hash_key="five_tuple", table_size=7)
l4 = L4ServiceSpec(version=1, loadbalancer_id="lb", vip="127.0.10.5", listeners=(listener,))
ANSWER = [amphora.model_dump_json(), l4.model_dump_json()]
"""


def test_this_agent_reads_an_old_controllers_specs(old: Path) -> None:
    amphora, l4 = run_old(old, _OLD_SPECS, None)
    assert AmphoraSpec.model_validate_json(amphora).udp_listeners[0].member_down == "keep"
    assert L4ServiceSpec.model_validate_json(l4).listeners[0].idle_timeout is None


_OLD_SETTINGS = """
from lbaas.config import Settings
try:
    Settings.model_validate(GIVEN)
    ANSWER = "read"
except Exception as exc:
    ANSWER = str(exc)
"""


def test_an_old_process_refuses_a_setting_of_this_release(old: Path) -> None:
    """A finding the procedure follows: a host's settings file gains this release's
    settings only once that host runs it (docs/operations.md, Rolling upgrade)."""
    answer = run_old(old, _OLD_SETTINGS, {"health": {"certificate_renewal_interval": 60}})
    assert "health.certificate_renewal_interval" in answer and "Extra inputs" in answer
