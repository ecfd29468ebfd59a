"""The host probe: a host's kernel answering on its agent's port, accepted or refused."""

from __future__ import annotations

import socket

from lbaas.health.host_probe import HostProbe, HostVerdicts, TcpHostProbe
from lbaas.model.fleet import HostAddress
from tests.support.waiting import wait_until


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_listening_agent_and_a_refused_port_are_both_answers() -> None:
    probe = TcpHostProbe(timeout=1.0)
    with socket.socket() as agent:
        agent.bind(("127.0.0.1", 0))
        agent.listen(1)
        assert probe.answers(HostAddress("h1", "127.0.0.1", agent.getsockname()[1]))
    # Nothing listens (the agent between its stop and its start): the kernel resets.
    assert probe.answers(HostAddress("h1", "127.0.0.1", _free_port()))


class Counting(HostProbe):
    def __init__(self, verdicts: list[bool]) -> None:
        self.verdicts = verdicts
        self.asked = 0

    def answers(self, host: HostAddress) -> bool:
        self.asked += 1
        return self.verdicts.pop(0)


def test_verdicts_are_probed_again_while_the_silence_lasts_and_forgotten_after() -> None:
    now = [0.0]
    probe = Counting([True, False, True])
    verdicts = HostVerdicts(probe, every=1.0, clock=lambda: now[0])
    host = HostAddress("h1", "127.0.0.1", 9443)
    verdicts.watch([host])
    assert verdicts.answers(host)  # the first probe's verdict, waited for
    now[0] = 0.5
    verdicts.watch([host])  # younger than ``every``: not probed again
    assert probe.asked == 1
    now[0] = 1.5
    verdicts.watch([host])  # probed again; the first verdict holds until this one ends
    wait_until(lambda: not verdicts.answers(host), 5.0, "the second probe's verdict")
    assert probe.asked == 2
    verdicts.watch([])  # heard again: forgotten, a later silence starts afresh
    assert verdicts.answers(host) is True and probe.asked == 3
    verdicts.close()
