"""The agent return watch: jobs waiting for an agent run as soon as it answers again."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lbaas.certs.authority import CertificateAuthority
from lbaas.certs.tlsconfig import server_context
from lbaas.jobs.agent_return import AgentReturnWatch, agent_answers


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _tls_agent(address: tuple[str, int], pki: Path) -> Iterator[None]:
    """Something like the agent: listens on ``address`` and does mutual-TLS handshakes."""
    ca = CertificateAuthority.load_or_create(pki)
    context = server_context(ca.ensure_identity(pki / "agent", "agent", "server"))
    stop = threading.Event()
    with socket.socket() as listening:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen()
        listening.settimeout(0.1)

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listening.accept()
                except TimeoutError:
                    continue
                conn.settimeout(5)
                try:
                    context.wrap_socket(conn, server_side=True).close()
                except OSError:
                    conn.close()  # the probe sends no certificate: refused, as by the agent

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)


def test_jobs_are_expedited_once_their_agent_answers_again(tmp_path: Path) -> None:
    port = _free_port()
    address = ("127.0.0.1", port)
    expedited: list[list[tuple[str, int]]] = []
    done = threading.Event()

    def expedite(jobs: list[tuple[str, int]]) -> None:
        expedited.append(jobs)
        done.set()

    watch = AgentReturnWatch(expedite, interval=0.05)
    assert not agent_answers(address)  # the agent is down
    watch.watch(address, ("lb-1", 3), for_seconds=120)
    watch.watch(("127.0.0.1", _free_port()), ("lb-other", 1), for_seconds=120)
    time.sleep(0.3)
    assert expedited == []  # nothing answers yet
    with _tls_agent(address, tmp_path):  # the agent restarts and serves
        assert done.wait(30)  # a bound against hanging, not an assertion on speed
    assert expedited == [[("lb-1", 3)]]  # only the jobs of the agent that is back


def test_a_socket_held_for_a_stopped_agent_is_not_an_answer(tmp_path: Path) -> None:
    """Socket activation: the service manager listens while no agent runs; connections
    complete in the backlog, but nobody is there to converge."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        address = held.getsockname()
        with socket.create_connection(address, timeout=1):
            pass  # the kernel accepts on the manager's behalf...
        assert not agent_answers(address, timeout=0.3)  # ...but no agent answers
    port = _free_port()
    with _tls_agent(("127.0.0.1", port), tmp_path):
        assert agent_answers(("127.0.0.1", port), timeout=5)  # an agent refusing TLS answers


def test_a_job_is_watched_no_longer_than_its_retry_delay() -> None:
    now = [100.0]
    answers = [False]
    expedited: list[list[tuple[str, int]]] = []
    watch = AgentReturnWatch(
        expedited.append, probe=lambda _address: answers[0], clock=lambda: now[0], background=False
    )
    watch.watch(("192.0.2.1", 9443), ("lb-1", 1), for_seconds=5)
    assert watch.check() == 0
    now[0] += 4
    answers[0] = True
    assert watch.check() == 1 and expedited == [[("lb-1", 1)]]  # back within the delay
    watch.watch(("192.0.2.1", 9443), ("lb-1", 2), for_seconds=5)
    now[0] += 6
    assert watch.check() == 0  # the agent answers, but its backoff retried the job already
    assert expedited == [[("lb-1", 1)]]
