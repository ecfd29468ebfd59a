"""``BackgroundLoop``: the loop runs in its own named thread and ends when stopped."""

from __future__ import annotations

import threading
import time

from lbaas.background import BackgroundLoop


class Counting(BackgroundLoop):
    def __init__(self, stubborn: bool = False) -> None:
        super().__init__("counting", stop_timeout=5)
        self.rounds = 0
        self.ran_in = ""
        self.third = threading.Event()
        self.in_round = threading.Event()
        self.release = threading.Event()
        self.stubborn = stubborn

    def _run(self) -> None:
        self.ran_in = threading.current_thread().name
        while not self._stop.wait(0.01):
            self.rounds += 1
            if self.rounds == 3:
                self.third.set()
            if self.stubborn:
                self.in_round.set()
                self.release.wait()


def test_the_loop_runs_in_its_named_daemon_thread_until_stopped() -> None:
    loop = Counting()
    loop.start()
    assert loop.third.wait(5)
    loop.stop()
    assert not loop._thread.is_alive() and loop._thread.daemon
    assert loop.ran_in == "counting"
    rounds = loop.rounds
    time.sleep(0.05)
    assert loop.rounds == rounds  # no round after stop


def test_stop_waits_no_longer_than_its_timeout_for_a_stuck_loop() -> None:
    loop = Counting(stubborn=True)
    loop.start()
    assert loop.in_round.wait(5)
    loop.stop(timeout=0.05)  # the loop is stuck in a round: stop returns anyway
    assert loop._thread.is_alive()
    loop.release.set()
    loop._thread.join(5)
    assert not loop._thread.is_alive()  # it saw the stop flag after its round
