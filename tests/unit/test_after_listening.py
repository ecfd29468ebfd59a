"""``AfterListening``: what serve's API does not need starts once the server has started;
a failure stops the server and is handed back; a server that never starts runs nothing.
The server is a plain object with uvicorn's two flags."""

from __future__ import annotations

import threading

from lbaas.after_listening import AfterListening, process_age


class FakeServer:
    def __init__(self) -> None:
        self.started = False
        self.should_exit = False


def test_start_runs_only_once_the_server_has_started() -> None:
    server, ran = FakeServer(), threading.Event()
    seen_started: list[bool] = []

    def start() -> None:
        seen_started.append(server.started)
        ran.set()

    after = AfterListening(start)
    after.watch(server)
    assert not ran.wait(0.2)  # not before the server answers
    server.started = True
    assert ran.wait(30)
    assert after.finish() is None
    assert seen_started == [True]
    assert not server.should_exit


def test_a_failed_start_stops_the_server_and_is_handed_back() -> None:
    server = FakeServer()
    server.started = True

    def start() -> None:
        raise OSError("heartbeat port taken")

    after = AfterListening(start)
    after.watch(server)
    failed = after.finish()
    assert isinstance(failed, OSError) and str(failed) == "heartbeat port taken"
    assert server.should_exit


def test_a_server_that_never_started_starts_nothing() -> None:
    server, ran = FakeServer(), []
    after = AfterListening(lambda: ran.append(1))
    after.watch(server)
    assert after.finish() is None  # the server's run ended (a stop signal) before serving
    server.started = True
    assert ran == []


def test_process_age_counts_from_the_process_start() -> None:
    age = process_age()
    assert 0 < age < 24 * 3600  # since the kernel started this test process
