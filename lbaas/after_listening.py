"""Start-up work that ``lbaas serve``'s API does not need, done once the API answers.

``lbaas serve`` used to start its embedded health manager and agent before the API: their
imports (the agent's FastAPI app, the amphora converger, HAProxy's supervision) are about
a third of serve's start-up, and on a loaded two-core machine a restarted serve took
15–33 s to answer (issue 31). Neither is needed to answer a request: a write only queues
a converge job, and the worker's call to the local agent waits in the agent's listening
socket, bound before anything else, until the agent serves. So they start here, on a
thread, as soon as the HTTP server has started. A failure to start them (a taken
heartbeat port) still stops serve: the server is told to exit and ``finish`` raises it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lbaas.errors import CommandRefused
from lbaas.startup_heap import freeze_startup_heap

if TYPE_CHECKING:
    import socket

    from lbaas.config import Settings

LOG = logging.getLogger(__name__)

# How often the thread looks whether the server has started.
_POLL = 0.02


class Server(Protocol):
    """What is read and set of ``uvicorn.Server``."""

    started: bool
    should_exit: bool


class AfterListening:
    """Runs ``start`` on a thread once ``server`` has started; ``finish`` waits for it."""

    def __init__(self, start: Callable[[], None]) -> None:
        self._start = start
        self._error: BaseException | None = None
        self._abandoned = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, server: Server) -> None:
        """Start waiting for ``server`` (before its ``run``)."""
        self._thread = threading.Thread(
            target=self._run, args=(server,), name="after-listening", daemon=True
        )
        self._thread.start()

    def _run(self, server: Server) -> None:
        while not server.started:
            if server.should_exit or self._abandoned.wait(_POLL):
                return  # stopped before it ever served: nothing more to start
        try:
            self._start()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread by finish()
            LOG.error("start-up after the API was listening failed: %s", exc)
            self._error = exc
            server.should_exit = True

    def finish(self) -> BaseException | None:
        """Wait for the start to end (or give it up if the server never started); what
        it raised, for the caller to raise once it has stopped everything else."""
        self._abandoned.set()
        if self._thread is not None:
            self._thread.join()
        return self._error


def process_age() -> float:
    """Seconds since this process started (the kernel's start time, so the interpreter's
    own start and the imports count), for the start-up log."""
    fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started


def has_agents(settings: Settings) -> bool:
    """Whether a provider of agents (and so a health manager) is enabled."""
    return bool({"amphora", "distributed"} & set(settings.providers.enabled))


def start_embedded_parts(
    settings: Settings,
    database: Any,
    notify: Callable[[], None],
    metrics: Any,
    sockets: tuple[socket.socket | None, socket.socket | None],
    stops: list[Callable[[], None]],
    held_logs: Any = None,
) -> None:
    """``serve``'s health manager (amphora or distributed provider: heartbeats, node
    polls; on the second of ``sockets``) and local agent (amphora provider, on the
    first); each one's stop is added to ``stops`` as it starts, so a later one's failure
    still stops the earlier ones. Then the start-up heap is frozen again (their objects
    too) and the whole start-up's time logged."""
    if has_agents(settings):
        from lbaas.health.service import start_health_manager

        agent_socket, heartbeat_socket = sockets
        stops.append(start_health_manager(settings, database, notify, metrics, heartbeat_socket))
        if "amphora" in settings.providers.enabled:
            stops.append(start_agent(settings, agent_socket, held_logs))
    freeze_startup_heap()
    LOG.info("lbaas serve: everything started %.1f s after the process", process_age())


def hold_embedded_access_logs(settings: Settings) -> Any:
    """``serve``'s embedded agent's access-log sockets, listened on again before anything
    starts (``lbaas.amphora.held_log_sockets``): its HAProxies' log forwarders stop
    spinning seconds before the agent adopts them. Root only (where the sockets are known
    before the agent is built; otherwise the agent holds them first thing)."""
    from lbaas.amphora.held_log_sockets import HeldLogSockets
    from lbaas.fleet.agent_paths import access_log_sockets, amphora_root_of

    if "amphora" not in settings.providers.enabled or os.geteuid() != 0:
        return None
    try:
        root = amphora_root_of(settings)  # the agent's own choice, short root included
    except CommandRefused:
        return None  # the agent refuses to start just after, saying why
    return HeldLogSockets.hold_stale(access_log_sockets(settings, root), root)


def start_agent(
    settings: Settings, listening: socket.socket | None = None, held_logs: Any = None
) -> Callable[[], None]:
    """An agent serving on ``listening`` (or binding its own), adopting the access-log
    sockets ``held_logs`` (``HeldLogSockets``, held by serve at its start); its stop."""
    from lbaas.fleet.agent_service import AgentService

    service = AgentService(settings, listening=listening, held_logs=held_logs)
    service.start()
    return service.stop
