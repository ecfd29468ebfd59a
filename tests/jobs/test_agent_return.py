"""The agent return watch: jobs waiting for an agent run as soon as it accepts again."""

from __future__ import annotations

import socket
import threading
import time

from lbaas.jobs.agent_return import AgentReturnWatch, agent_answers


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_jobs_are_expedited_once_their_agent_listens_again() -> None:
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
    with socket.socket() as agent:  # the agent restarts and listens
        agent.bind(address)
        agent.listen()
        assert done.wait(30)  # a bound against hanging, not an assertion on speed
    assert expedited == [[("lb-1", 3)]]  # only the jobs of the agent that is back


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
