"""A real agent process restarted (SIGTERM, SIGKILL) while its HAProxy serves on: the
counters a health manager folds from its heartbeats do not count the same traffic twice."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agent_e2e_support import (
    LISTENER,
    Backend,
    Server,
    free_port,
    haproxy_config,
    http_get,
    random_loopback,
)

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.errors import AgentUnreachable
from lbaas.fleet.client import AgentClient
from lbaas.health.counters import CounterRecord, fold, total
from lbaas.host.loopback import LoopbackHostOps
from lbaas.wire.amphora import AmphoraSpec, VipSpec, amphora_paths
from lbaas.wire.heartbeat.envelope import open_envelope
from lbaas.wire.heartbeat.host_codec import is_host_payload
from lbaas.wire.heartbeat.report_codec import from_payload
from tests.support.processes import lbaas_env, lbaas_process
from tests.support.udp import udp_receiver
from tests.support.waiting import wait_until

pytestmark = pytest.mark.haproxy
KEY = "e2e-restart-key"
AMPHORA = "amp-restart"


class HealthManagerView:
    """Folds heartbeats as the health manager does, for the one listener under test."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.record: CounterRecord | None = None
        self.epochs: list[int] = []

    def hear(self, count: int, epoch_after: int = -1) -> None:
        """Fold heartbeats until ``count`` of them came from an epoch after ``epoch_after``."""
        heard = 0
        while heard < count:
            envelope = open_envelope(self.sock.recv(65536), KEY.encode())
            if is_host_payload(envelope.payload):  # the agent's host heartbeat (fleet)
                continue
            _, report = from_payload(envelope.payload)
            listener = report.listeners.get(LISTENER)
            if listener is None:
                continue
            self.record = fold(self.record, envelope.epoch, listener.counters)
            if envelope.epoch not in self.epochs:
                self.epochs.append(envelope.epoch)
            heard += envelope.epoch > epoch_after

    def connections(self) -> int:
        return 0 if self.record is None else total(self.record).total_connections


@pytest.fixture
def heartbeats() -> Iterator[socket.socket]:
    with udp_receiver(30) as sock:
        yield sock


def test_agent_restarts_count_nothing_twice(
    short_dir: Path, backends: list[Backend], heartbeats: socket.socket
) -> None:
    agent_port = free_port()
    env = lbaas_env(
        {
            "state_dir": str(short_dir),
            "agent": {"host": "127.0.0.1", "port": agent_port, "mode": "loopback"},
            "health": {
                "bind_host": "127.0.0.1",
                "bind_port": heartbeats.getsockname()[1],
                "heartbeat_key": KEY,
                "heartbeat_interval": 0.2,
            },
        }
    )
    tls = CertificateAuthority.load_or_create(short_dir / "pki").ensure_identity(
        short_dir / "pki" / "controller", "controller", "client"
    )
    url = f"https://127.0.0.1:{agent_port}"
    view = HealthManagerView(heartbeats)
    vip = random_loopback()
    port = free_port(vip)
    try:
        with _agent(env, short_dir, url, tls) as agent:
            _put(url, tls, vip, port, backends)
            for _ in range(20):
                http_get(vip, port)
            wait_until(lambda: _heard(view) == 20, what="20 connections in the heartbeats")
            agent.send_signal(signal.SIGTERM)
            assert agent.wait(30) == 0
        for kill in (signal.SIGTERM, signal.SIGKILL):
            last_epoch = view.epochs[-1]
            with _agent(env, short_dir, url, tls) as agent:
                view.hear(10, epoch_after=last_epoch)  # the new life, no traffic
                assert view.connections() == 20, f"after a restart ({kill.name})"
                os.kill(agent.pid, kill)
                agent.wait(30)
        with _agent(env, short_dir, url, tls):
            for _ in range(5):
                http_get(vip, port)
            wait_until(lambda: _heard(view) == 25, what="the new connections counted once")
        assert len(view.epochs) == 4  # four agent lives, one HAProxy
    finally:
        cleanup = AmphoraRegistry(short_dir / "amphorae", LoopbackHostOps())
        cleanup.restore()
        cleanup.delete(AMPHORA)


def _heard(view: HealthManagerView) -> int:
    view.hear(1)
    return view.connections()


@contextmanager
def _agent(
    env: dict[str, str], state: Path, url: str, tls: TlsFiles
) -> Iterator[subprocess.Popen[bytes]]:
    with lbaas_process(["agent"], env, state / "agent.log") as proc:
        wait_until(lambda: _answers(url, tls), what="the agent to answer")
        yield proc


def _answers(url: str, tls: TlsFiles) -> bool:
    try:
        with AgentClient(url, tls=tls) as client:
            client.info()
        return True
    except AgentUnreachable:
        return False


def _put(url: str, tls: TlsFiles, vip: str, port: int, backends: list[Backend]) -> None:
    with AgentClient(url, tls=tls) as client:
        directory = Path(amphora_paths(client.info().amphora_root, AMPHORA).directory)
        servers = [Server(f"m{i}", b.address, b.port) for i, b in enumerate(backends)]
        spec = AmphoraSpec(
            version=1,
            loadbalancer_id="lb-restart",
            **haproxy_config(directory, vip, port, servers),
            vip=VipSpec(address=vip, subnet_cidr=f"{vip}/32", network_id="lo"),
        )
        assert client.put_amphora(AMPHORA, spec).running
