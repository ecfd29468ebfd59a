"""``lbaas diagnose`` names the broken hop: each case breaks one for real (a converge the
provider refuses, an amphora gone silent with its agent stopped, nothing serving the VIP,
a member failing its health check) and checks the verdicts. The agent view and the VIP
probe are the real ones: TLS to an agent port nothing listens on, TCP to the VIP."""

from __future__ import annotations

import datetime
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from lbaas.cli import main
from lbaas.db.hosts import host_repo
from lbaas.db.tables import AmphoraRow
from lbaas.diagnose.command import build_diagnosis
from lbaas.diagnose.diagnosis import Diagnosis, first_failure, render
from lbaas.diagnose.verdict import Level, Verdict
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model.fleet import HostAddress
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from tests.api.test_amphorae import add_amphora
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.certificates import issue, make_ca
from tests.support.key_manager import store_certificate_container


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


AGENT_PORT = _unused_port()  # nothing listens there: the agent is "stopped"


class _Ok(BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:  # noqa: N802 - the http.server protocol
        self.server.requests.append(self.requestline)  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(address: str, port: int) -> Iterator[list[str]]:
    """A real HTTP server on the VIP: what HAProxy would be on a working data plane. It
    yields the request lines it was sent (what an access log would record)."""
    server = ThreadingHTTPServer((address, port), _Ok)
    requests: list[str] = []
    server.requests = requests  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def diagnosis(plane: Any) -> Diagnosis:
    return build_diagnosis(plane.settings, plane.database)


def by_hop(verdicts: list[Verdict], hop: str) -> list[Verdict]:
    return [v for v in verdicts if v.hop == hop]


def service(api: Api, port: int, monitor: bool = False) -> dict[str, Any]:
    lb = api.create_lb()
    listener = api.create_listener(lb["id"], protocol_port=port)
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    if monitor:
        api.create_healthmonitor(lb["id"], pool["id"])
    member = api.create_member(lb["id"], pool["id"])
    return {"lb": lb, "listener": listener, "pool": pool, "member": member}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"agent": {"port": AGENT_PORT, "host": "127.0.0.1"}}


def test_a_well_load_balancer_passes_every_hop(api: Api, plane: Any) -> None:
    port = _unused_port()
    tree = service(api, port)
    with serving(tree["lb"]["vip_address"], port):
        verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert verdicts is not None
    assert first_failure(verdicts) is None, render(tree["lb"]["id"], verdicts)
    assert by_hop(verdicts, "tls")[0].level is Level.SKIP  # no TLS here
    assert [v.level for v in by_hop(verdicts, "vip")] == [Level.OK]
    assert by_hop(verdicts, "amphora")[0].level is Level.SKIP  # the noop provider has none
    assert "every hop is well" in render(tree["lb"]["id"], verdicts)


def test_nothing_on_the_vip_is_named(api: Api, plane: Any) -> None:
    port = _unused_port()
    tree = service(api, port)
    verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert verdicts is not None
    failed = first_failure(verdicts)
    assert failed is not None and failed.hop == "vip", verdicts
    assert f":{port}: does not answer" in failed.detail
    assert tree["listener"]["id"] in failed.detail


def test_a_member_failing_its_health_check_is_named(api: Api, plane: Any) -> None:
    port = _unused_port()
    tree = service(api, port, monitor=True)
    amphora = AmphoraId(add_amphora(plane, tree["lb"]["id"], host="127.0.0.1"))
    report = HealthReport(
        LoadBalancerId(tree["lb"]["id"]),
        {ListenerId(tree["listener"]["id"]): ListenerHealth(ListenerState.OPEN)},
        {
            PoolId(tree["pool"]["id"]): PoolHealth(
                PoolState.DOWN, {MemberId(tree["member"]["id"]): MemberState.DOWN}
            )
        },
    )
    store = SqlHealthStore(plane.database)
    HeartbeatProcessor(store).process(amphora, 1, report, 1)
    store.flush()
    with serving(tree["lb"]["vip_address"], port):
        verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert verdicts is not None
    (member,) = by_hop(verdicts, "members")
    assert member.level is Level.FAIL
    assert tree["member"]["id"] in member.detail and "failing its health check" in member.detail
    # The amphora was heard just now, but its agent (nothing on AGENT_PORT) is not there.
    assert by_hop(verdicts, "amphora")[0].level is Level.OK
    assert by_hop(verdicts, "agent")[0].level is Level.FAIL


def _probed(plane: Any, tree: dict[str, Any], vip_up: bool) -> str:
    """An amphora whose heartbeat says the listener OPEN, its member UP and what the
    agent's VIP probe found, applied as the health manager applies one."""
    amphora = AmphoraId(add_amphora(plane, tree["lb"]["id"], host="127.0.0.1"))
    report = HealthReport(
        LoadBalancerId(tree["lb"]["id"]),
        {ListenerId(tree["listener"]["id"]): ListenerHealth(ListenerState.OPEN, vip_up=vip_up)},
        {
            PoolId(tree["pool"]["id"]): PoolHealth(
                PoolState.UP, {MemberId(tree["member"]["id"]): MemberState.UP}
            )
        },
    )
    store = SqlHealthStore(plane.database)
    HeartbeatProcessor(store).process(amphora, 1, report, 1)
    store.flush()
    return amphora


def test_a_vip_the_agents_probe_cannot_reach_fails_while_its_members_are_healthy(
    api: Api, plane: Any
) -> None:
    port = _unused_port()
    tree = service(api, port, monitor=True)
    amphora = _probed(plane, tree, vip_up=False)
    # Something answers here, but an amphora's VIP is never probed from here: that
    # connect would be a line in the tenant's access log. The agents' word decides.
    with serving(tree["lb"]["vip_address"], port) as requests:
        verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert requests == []
    assert verdicts is not None
    (vip,) = by_hop(verdicts, "vip")
    assert vip.level is Level.FAIL, vip
    assert f"agent probe from amphora {amphora}: no answer" in vip.detail
    assert "its members are healthy" in vip.detail
    assert [v.level for v in by_hop(verdicts, "members")] == [Level.OK]
    assert "broken at the vip hop" in render(tree["lb"]["id"], [vip, *by_hop(verdicts, "members")])


def test_a_vip_the_agents_reach_is_well_unprobed_from_here(api: Api, plane: Any) -> None:
    port = _unused_port()
    tree = service(api, port)
    amphora = _probed(plane, tree, vip_up=True)
    verdicts = diagnosis(plane).run(tree["lb"]["id"])  # nothing serves here: not asked
    assert verdicts is not None
    (vip,) = by_hop(verdicts, "vip")
    assert vip.level is Level.OK, vip
    assert f"amphora {amphora}: answers" in vip.detail


def test_a_silent_amphoras_probe_is_not_believed(api: Api, plane: Any) -> None:
    port = _unused_port()
    tree = service(api, port)
    amphora = _probed(plane, tree, vip_up=False)
    with plane.database.write() as session:
        session.execute(
            update(AmphoraRow)
            .where(AmphoraRow.id == amphora)
            .values(last_heartbeat_at=time.time() - 120)
        )
    with serving(tree["lb"]["vip_address"], port) as requests:
        verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert requests == []
    assert verdicts is not None
    (vip,) = by_hop(verdicts, "vip")
    assert vip.level is Level.SKIP and "not probed: no agent probe" in vip.detail, vip


def test_a_silent_amphora_and_its_stopped_agent_are_named(api: Api, plane: Any) -> None:
    port = _unused_port()
    tree = service(api, port)
    amphora = add_amphora(
        plane, tree["lb"]["id"], host="127.0.0.1", last_heartbeat_at=time.time() - 120
    )
    with serving(tree["lb"]["vip_address"], port):
        verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert verdicts is not None
    failed = first_failure(verdicts)
    assert failed is not None and failed.hop == "amphora", verdicts
    assert amphora in failed.detail and "silent for" in failed.detail
    (agent,) = by_hop(verdicts, "agent")
    assert agent.level is Level.FAIL and "unreachable" in agent.detail
    host_id = plane.settings.agent.host_id
    assert f"(host {host_id} at https://127.0.0.1:{AGENT_PORT}) unreachable" in agent.detail
    assert by_hop(verdicts, "haproxy")[0].level is Level.SKIP


def test_an_enrolled_hosts_agent_is_asked_where_the_host_is(api: Api, plane: Any) -> None:
    """Not at the configured agent's port: at the address and port the host enrolled with,
    both named when nothing answers there."""
    tree = service(api, _unused_port())
    elsewhere = _unused_port()
    with plane.database.write() as session:
        host_repo.enrol(
            session,
            HostAddress("far-host", "127.0.0.1", elsewhere),
            zone="z",
            capacity=4,
            now=datetime.datetime(2024, 1, 1),
        )
    add_amphora(plane, tree["lb"]["id"], host="127.0.0.1", compute_id="far-host")
    verdicts = diagnosis(plane).run(tree["lb"]["id"])
    assert verdicts is not None
    (agent,) = by_hop(verdicts, "agent")
    assert agent.level is Level.FAIL, agent
    assert f"(host far-host at https://127.0.0.1:{elsewhere}) unreachable" in agent.detail


class TestRefusedConverge:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"providers": {"noop_fail": "permanent"}}

    def test_the_converge_error_is_named(self, api: Api, plane: Any) -> None:
        created = api.post(
            "/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
        )
        lb_id = created.json()["loadbalancer"]["id"]
        api.wait_lb(lb_id, "ERROR")
        verdicts = diagnosis(plane).run(lb_id)
        assert verdicts is not None
        failed = first_failure(verdicts)
        assert failed is not None and failed.hop == "converge", verdicts
        assert "noop provider told to fail" in failed.detail


def test_the_command_takes_a_name_as_well_as_an_id(
    api: Api, plane: Any, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    solo = api.create_lb(name="solo")
    twins = [api.create_lb(name="twin"), api.create_lb(name="twin")]
    # A load balancer whose name is another's id: the id wins.
    api.create_lb(name=solo["id"])
    common = ["--state-dir", str(plane.settings.state_dir)]
    if database_url:
        common += ["--database-url", database_url]

    assert main(["diagnose", *common, "solo"]) in (0, 1)
    assert f"load balancer {solo['id']}" in capsys.readouterr().out
    assert main(["diagnose", *common, solo["id"]]) in (0, 1)
    assert f"load balancer {solo['id']}\n" in capsys.readouterr().out

    assert main(["diagnose", *common, "twin"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert "2 load balancers are named 'twin'" in line
    assert all(lb["id"] in line for lb in twins), line

    assert main(["diagnose", *common, "nobody"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == "no load balancer with the id or name 'nobody'"


def test_the_command_exits_by_verdict(
    api: Api, plane: Any, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = service(api, _unused_port())
    common = ["--state-dir", str(plane.settings.state_dir)]
    if database_url:
        common += ["--database-url", database_url]
    assert main(["diagnose", *common, "no-such-lb"]) == 2
    assert main(["diagnose", *common, tree["lb"]["id"]]) == 1
    out = capsys.readouterr().out
    assert f"load balancer {tree['lb']['id']}" in out
    assert "verdict: broken at the vip hop" in out


def test_the_certificates_hop_reads_every_reference_as_the_worker_would(
    api: Api, plane: Any, client: TestClient
) -> None:
    ca = make_ca()
    lasting = store_certificate_container(client, api.project, issue(ca, "a.example.com"))
    lb = api.create_lb()
    api.create_listener(
        lb["id"], protocol="TERMINATED_HTTPS", protocol_port=443,
        default_tls_container_ref=lasting,
    )  # fmt: skip
    (hop,) = by_hop(_verdicts(plane, lb["id"]), "tls")
    assert hop.level is Level.OK and "1 references readable" in hop.detail, hop

    closing = store_certificate_container(client, api.project, issue(ca, "b.example", days=5))
    api.create_listener(
        lb["id"], protocol="TERMINATED_HTTPS", protocol_port=8443,
        default_tls_container_ref=closing,
    )  # fmt: skip
    (hop,) = by_hop(_verdicts(plane, lb["id"]), "tls")
    assert hop.level is Level.WARN and closing in hop.detail and "expires" in hop.detail, hop

    # The container deleted in the key manager: nothing shows it until the next converge
    # fails, except this hop.
    container_id = closing.rsplit("/", 1)[1]
    headers = {"X-Project-Id": api.project, "X-Roles": "member"}
    gone = client.delete(f"/key-manager/v1/containers/{container_id}", headers=headers)
    assert gone.status_code == 204, gone.text
    verdicts = _verdicts(plane, lb["id"])
    failed = first_failure(verdicts)
    assert failed is not None and failed.hop == "tls", verdicts
    assert closing in failed.detail and "cannot be read" in failed.detail


def _verdicts(plane: Any, lb_id: str) -> list[Verdict]:
    verdicts = diagnosis(plane).run(lb_id)
    assert verdicts is not None
    return verdicts
