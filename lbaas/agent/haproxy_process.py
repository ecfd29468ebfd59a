"""One HAProxy per amphora, changed the least disruptive way.

``HaproxyInstance.apply`` is the agent's whole policy for a new configuration text:

1. write it next to the running file and check it with the real ``haproxy -c`` (and its
   global ``maxconn`` against the file descriptors this host allows, which ``-c`` does not
   check); a refusal is ``InvalidRenderedConfig`` and the running HAProxy is left untouched;
2. no HAProxy running: install the file and start one (master-worker);
3. text identical to the running file: nothing at all (a repeated PUT is a no-op);
4. only server weights or ``disabled`` differ (``runtime_changes``): change them through the
   runtime API and install the file, so a later reload or restart keeps them. No reload;
5. anything else: save the servers' runtime state to the server-state file, install the file
   and reload seamlessly through the master. If the reload fails the previous file is put
   back, so the file on disk always matches what HAProxy runs. The caller may wrap the
   reload in a ``ReloadGuard``, given the runtime socket of the worker being replaced (the
   statistics use it to read that worker to its end).

What the instance knows about a text (socket, state file, maxconn, servers) is the
``HaproxyFacts`` sent with it, stored beside the installed file as ``haproxy.facts.json``
and installed and put back with it; the text itself is never parsed. The file on disk is
therefore the running configuration, which is what makes step 3 cheap and what
``ensure_running`` restarts from when a master has died.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from enum import StrEnum
from pathlib import Path

from lbaas.agent.host.base import HaproxyFiles, HostOps
from lbaas.agent.runtime_api import MasterCli, RuntimeApi, RuntimeApiError
from lbaas.agent.runtime_changes import ServerChange, runtime_only_changes
from lbaas.agent.wire import HaproxyFacts
from lbaas.errors import InvalidRenderedConfig

log = logging.getLogger(__name__)

RuntimeApiFactory = Callable[[Path], RuntimeApi]
ReloadGuard = Callable[[Path], AbstractContextManager[object]]
#: Seconds to wait for the master CLI when reading statistics (heartbeats are short).
MASTER_CLI_TIMEOUT = 2.0
#: The facts of the installed configuration, beside it in the amphora's directory.
FACTS_FILE = "haproxy.facts.json"
# HAProxy needs two descriptors per connection plus some for listeners, logs and sockets.
FD_RESERVE = 100


def max_connections_for(fd_limit: int) -> int:
    """The largest global ``maxconn`` HAProxy can start with under ``fd_limit``."""
    return max((fd_limit - FD_RESERVE) // 2, 0)


class ApplyOutcome(StrEnum):
    UNCHANGED = "UNCHANGED"
    STARTED = "STARTED"
    RUNTIME_API = "RUNTIME_API"
    RELOADED = "RELOADED"


class HaproxyInstance:
    """The HAProxy of one amphora, living in ``directory``."""

    def __init__(
        self,
        directory: Path,
        host: HostOps,
        *,
        namespace: str | None = None,
        runtime_api: RuntimeApiFactory = RuntimeApi.at,
    ) -> None:
        self.directory = directory
        self.files = HaproxyFiles.in_directory(directory)
        self.namespace = namespace
        self._host = host
        self._runtime_api = runtime_api
        self.reloads = 0
        self.restarts = 0
        self.runtime_changes = 0

    @property
    def running_config(self) -> str | None:
        try:
            return self.files.config.read_text()
        except FileNotFoundError:
            return None

    @property
    def running_facts(self) -> HaproxyFacts | None:
        """The facts sent with the installed configuration; None if none are stored."""
        try:
            return HaproxyFacts.model_validate_json(self._facts_file.read_text())
        except (OSError, ValueError) as exc:
            if not isinstance(exc, FileNotFoundError):
                log.warning("unreadable %s in %s: %s", FACTS_FILE, self.directory, exc)
            return None

    def runtime(self) -> RuntimeApi | None:
        """The runtime API of the running configuration, if its facts are known."""
        facts = self.running_facts
        return None if facts is None else self._runtime_api(self._socket(facts))

    def master_pid(self) -> int | None:
        return self._host.haproxy_master_pid(self.files)

    def master_cli(self) -> MasterCli:
        return MasterCli.at(self.files.master_socket, MASTER_CLI_TIMEOUT)

    def apply(
        self, config_text: str, facts: HaproxyFacts, reload_guard: ReloadGuard | None = None
    ) -> ApplyOutcome:
        """Make HAProxy run ``config_text``, described by ``facts``; see the module docstring."""
        self._check_fd_limit(facts)
        self.directory.mkdir(parents=True, exist_ok=True)
        candidate = self.directory / "haproxy.cfg.candidate"
        _write(candidate, config_text)
        try:
            self._host.validate_haproxy_config(candidate, self.directory)
        except BaseException:
            candidate.unlink(missing_ok=True)
            raise
        self._ensure_state_file(facts)
        old_text, old_facts = self.running_config, self.running_facts
        if self.master_pid() is None:
            self._install(candidate, facts)
            self._host.start_haproxy(self.files, self.namespace)
            return ApplyOutcome.STARTED
        if old_text == config_text:
            candidate.unlink()
            if old_facts != facts:
                _write(self._facts_file, facts.model_dump_json())
            return ApplyOutcome.UNCHANGED
        changes = runtime_only_changes(old_facts, facts)
        if changes is not None and self._apply_at_runtime(facts, changes):
            self._install(candidate, facts)
            self.runtime_changes += 1
            return ApplyOutcome.RUNTIME_API
        self._reload(candidate, facts, old_text, old_facts, reload_guard)
        return ApplyOutcome.RELOADED

    def _reload(
        self,
        candidate: Path,
        facts: HaproxyFacts,
        old_text: str | None,
        old_facts: HaproxyFacts | None,
        reload_guard: ReloadGuard | None,
    ) -> None:
        """Install ``candidate`` and reload; put the previous file back if that fails."""
        self._save_server_state(old_facts)
        previous = self.directory / "haproxy.cfg.previous"
        if old_text is not None:
            _write(previous, old_text)
        self._install(candidate, facts)
        guard: AbstractContextManager[object] = (
            nullcontext()
            if reload_guard is None or old_facts is None
            else reload_guard(self._socket(old_facts))
        )
        try:
            with guard:
                self._host.reload_haproxy(self.files)
        except BaseException:
            if old_text is not None:
                os.replace(previous, self.files.config)
                if old_facts is not None:
                    _write(self._facts_file, old_facts.model_dump_json())
            raise
        self.reloads += 1

    def ensure_running(self) -> bool:
        """Start HAProxy again on the installed file if its master is gone; True if it did."""
        if self.running_config is None or self.master_pid() is not None:
            return False
        facts = self.running_facts
        if facts is not None:
            self._ensure_state_file(facts)
        self._host.start_haproxy(self.files, self.namespace)
        self.restarts += 1
        return True

    def stop(self) -> None:
        """Stop HAProxy (dropping connections) and keep the files. Idempotent."""
        self._host.stop_haproxy(self.files)

    @property
    def _facts_file(self) -> Path:
        return self.directory / FACTS_FILE

    def _socket(self, facts: HaproxyFacts) -> Path:
        return self.directory / facts.runtime_socket

    def _install(self, candidate: Path, facts: HaproxyFacts) -> None:
        os.replace(candidate, self.files.config)
        _write(self._facts_file, facts.model_dump_json())

    def _check_fd_limit(self, facts: HaproxyFacts) -> None:
        """Refuse a maxconn HAProxy could not start with here (``haproxy -c`` does not know)."""
        limit = self._host.haproxy_fd_limit()
        if limit is None or facts.maxconn is None:
            return
        allowed = max_connections_for(limit)
        if facts.maxconn > allowed:
            raise InvalidRenderedConfig(
                "The load balancer asks for more connections than its host allows.",
                f"global maxconn {facts.maxconn} needs more than the {limit} file "
                f"descriptors HAProxy may open on this host; render at most {allowed}",
            )

    def _apply_at_runtime(self, facts: HaproxyFacts, changes: list[ServerChange]) -> bool:
        api = self._runtime_api(self._socket(facts))
        try:
            for change in changes:
                if change.weight is not None:
                    api.set_server_weight(change.backend, change.server, change.weight)
                if change.disabled is not None:
                    api.set_server_state(
                        change.backend, change.server, "maint" if change.disabled else "ready"
                    )
        except RuntimeApiError as exc:
            log.warning(
                "runtime API change in %s failed, reloading instead: %s", self.directory, exc
            )
            return False
        return True

    def _save_server_state(self, facts: HaproxyFacts | None) -> None:
        """Dump runtime server state where the running config loads it from at start-up."""
        if facts is None or facts.server_state_file is None:
            return
        try:
            state = self._runtime_api(self._socket(facts)).show_servers_state()
        except RuntimeApiError as exc:
            log.warning("could not save server state of %s: %s", self.directory, exc)
            return
        _write(self.directory / facts.server_state_file, state)

    def _ensure_state_file(self, facts: HaproxyFacts) -> None:
        """HAProxy warns at start-up about a missing state file; an empty one says "version 1"."""
        if facts.server_state_file is None:
            return
        path = self.directory / facts.server_state_file
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            _write(path, "1\n")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
