"""Access-log socket keepers started by tests, each stopped at the test's end."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

from lbaas.amphora.keeper_protocol import answers
from lbaas.host.log_keeper_exec import keeper_argv
from tests.support.waiting import wait_until


class Keepers:
    """Starts keepers (``start``, until they answer) and kills what is left at ``close``."""

    def __init__(self) -> None:
        self._started: list[subprocess.Popen[bytes]] = []

    def start(self, control: Path, *extra: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(keeper_argv(control, *extra), stdin=subprocess.DEVNULL)
        self._started.append(process)
        wait_until(lambda: answers(str(control)) or process.poll() is not None, 30.0, "keeper")
        return process

    def close(self) -> None:
        for process in self._started:
            if process.poll() is None:
                process.kill()
            process.wait()


def stopped_after() -> Iterator[Keepers]:
    """A fixture's body: the keepers of one test, stopped after it."""
    started = Keepers()
    try:
        yield started
    finally:
        started.close()
