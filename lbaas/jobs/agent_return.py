"""Retrying at once the converges that wait for an agent, when that agent is back.

A converge whose agent cannot be reached is retried with backoff (up to
``worker.backoff_max``): after an agent restart its load balancers used to stay PENDING
for up to that long again although the agent already answered. So the runner hands each
such job to this watch, which tries a TCP connection to the agent every ``interval`` and,
once one succeeds, makes the jobs runnable at once (``expedite``: only jobs still backing
off from that very attempt, so nothing another worker already retried). A job is watched
no longer than its own retry delay; the thread runs only while something is watched.

A TCP connection alone is no sign of the agent: when a service manager holds the agent's
listening socket (socket activation), the kernel completes connections into its backlog
while no agent runs. So the probe waits for the agent itself to answer a TLS handshake.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

Job = tuple[str, int]
"""(load balancer id, the job's attempt count while it backs off)"""
Address = tuple[str, int]


def agent_answers(address: Address, timeout: float = 0.5) -> bool:
    """Whether the agent process at ``address`` answers a TLS handshake within ``timeout``.

    Nothing is verified (this only asks whether someone is there: the converge checks
    who); a TLS alert is an answer too. Silence, a reset or an end of the connection
    without a word (an agent that died holding it) are not.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection(address, timeout=timeout) as raw,
            context.wrap_socket(raw),
        ):
            return True
    except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
        return False
    except ssl.SSLError:
        return True  # the agent's own refusal, e.g. of a client without a certificate
    except OSError:
        return False


class AgentReturnWatch:
    def __init__(
        self,
        expedite: Callable[[list[Job]], None],
        *,
        interval: float = 0.25,
        probe: Callable[[Address], bool] = agent_answers,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        """``background=False``: no thread, the caller runs ``check`` (tests)."""
        self._background = background
        self._expedite = expedite
        self._interval = interval
        self._probe = probe
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[Address, dict[Job, float]] = {}
        """agent → {job: when to stop watching it}"""
        self._thread: threading.Thread | None = None

    def watch(self, address: Address, job: Job, for_seconds: float) -> None:
        """Expedite ``job`` if the agent at ``address`` answers within ``for_seconds``."""
        with self._lock:
            self._waiting.setdefault(address, {})[job] = self._clock() + for_seconds
            if self._thread is None and self._background:
                self._thread = threading.Thread(
                    target=self._run, name="agent-return-watch", daemon=True
                )
                self._thread.start()

    def check(self) -> int:
        """Probe every watched agent once; expedite the jobs of those that answer."""
        now = self._clock()
        with self._lock:
            for jobs in self._waiting.values():
                for job in [job for job, until in jobs.items() if until < now]:
                    del jobs[job]
            self._waiting = {address: jobs for address, jobs in self._waiting.items() if jobs}
            addresses = list(self._waiting)
        back = [address for address in addresses if self._probe(address)]
        ready: list[Job] = []
        with self._lock:
            for address in back:
                ready += list(self._waiting.pop(address, {}))
        if ready:
            log.info("agent(s) %s answer again: retrying %d converge(s) now", back, len(ready))
            self._expedite(ready)
        return len(ready)

    def _run(self) -> None:
        while True:
            try:
                self.check()
            except Exception:  # the top of the watch loop: the backoff still retries
                log.exception("agent return watch failed")
            time.sleep(self._interval)
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return
