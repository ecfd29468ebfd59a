"""``lbaas agent`` on a listening socket a service manager holds (socket activation): it
serves there, and a request sent while it is stopped is answered by the next agent, with
the configured agent's client and with a fleet host's (whose connect timeout is short,
but whose TLS handshake may wait for a restarting agent)."""

from __future__ import annotations

import signal
import socket
import threading
from pathlib import Path

import pytest

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.errors import AgentUnreachable
from lbaas.fleet.client import AgentClient
from lbaas.fleet.client_pool import CONNECT_TIMEOUT, tls_client_factory
from lbaas.model.fleet import HostAddress
from lbaas.wire.amphora import AgentInfo
from tests.support.processes import lbaas_env, lbaas_process
from tests.support.waiting import wait_until


def _answers(url: str, tls: TlsFiles) -> bool:
    try:
        with AgentClient(url, tls=tls, timeout=5) as client:
            client.info()
        return True
    except AgentUnreachable:
        return False


HOST_ID = "activated-host"


def _client(kind: str, url: str, port: int, tls: TlsFiles) -> AgentClient:
    if kind == "configured":  # the one agent of ``agent.host``:``agent.port``
        return AgentClient(url, tls=tls, timeout=120)
    return tls_client_factory(tls)(HostAddress(HOST_ID, "127.0.0.1", port))


@pytest.mark.parametrize("kind", ["configured", "fleet"])
def test_a_request_to_a_stopped_activated_agent_is_answered_by_the_next(
    short_dir: Path, kind: str
) -> None:
    with socket.socket() as listening:  # the service manager's: it outlives every agent
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        port = listening.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            heartbeats = udp.getsockname()[1]
        env = lbaas_env(
            {
                "state_dir": str(short_dir),
                "agent": {
                    "host": "127.0.0.1",
                    "port": port,
                    "mode": "loopback",
                    "host_id": HOST_ID,
                },
                "health": {"bind_host": "127.0.0.1", "bind_port": heartbeats},
            }
        )
        pki = short_dir / "pki"
        tls = CertificateAuthority.load_or_create(pki).ensure_identity(
            pki / "controller", "controller", "client"
        )
        url = f"https://127.0.0.1:{port}"
        log = short_dir / "agent.log"
        with lbaas_process(["agent"], env, log, listening) as agent:
            wait_until(lambda: _answers(url, tls), what="the activated agent to answer")
            agent.send_signal(signal.SIGTERM)
            assert agent.wait(30) == 0, log.read_text()[-2000:]

        answered: list[AgentInfo | Exception] = []

        def ask() -> None:
            try:
                with _client(kind, url, port, tls) as client:
                    answered.append(client.info())
            except AgentUnreachable as exc:
                answered.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        asking.join(CONNECT_TIMEOUT + 1.0)
        assert asking.is_alive() and not answered  # waiting in the backlog, not refused
        with lbaas_process(["agent"], env, log, listening):
            asking.join(120)
        assert len(answered) == 1 and isinstance(answered[0], AgentInfo), answered
        assert answered[0].mode == "loopback"
