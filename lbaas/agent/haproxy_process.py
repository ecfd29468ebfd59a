"""One HAProxy per amphora, changed the least disruptive way.

``HaproxyInstance.apply`` is the agent's whole policy for a new configuration text:

1. write it next to the running file and check it with the real ``haproxy -c`` (and its
   global ``maxconn`` against the file descriptors this host allows, which ``-c`` does not
   check); a refusal is ``InvalidRenderedConfig`` and the running HAProxy is left untouched;
2. no HAProxy running: install the file and start one (master-worker);
3. text identical to the running file: nothing at all (a repeated PUT is a no-op);
4. only server weights or ``disabled`` differ: change them through the runtime API and
   install the file, so a later reload or restart keeps them. No reload;
5. anything else: save the servers' runtime state to the ``server-state-file`` the text
   names, install the file and reload seamlessly through the master. If the reload fails the
   previous file is put back, so the file on disk always matches what HAProxy runs. The
   caller may wrap the reload in a ``ReloadGuard``, given the runtime socket of the worker
   being replaced (the statistics use it to read that worker to its end).

The file on disk is therefore the running configuration, which is what makes step 3 cheap
and what ``ensure_running`` restarts from when a master has died.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from enum import StrEnum
from pathlib import Path

from lbaas.agent.haproxy_config_text import (
    ConfigFacts,
    ServerChange,
    max_connections_for,
    read_config_facts,
    runtime_only_changes,
)
from lbaas.agent.host.base import HaproxyFiles, HostOps
from lbaas.agent.runtime_api import MasterCli, RuntimeApi, RuntimeApiError
from lbaas.errors import InvalidRenderedConfig

log = logging.getLogger(__name__)

RuntimeApiFactory = Callable[[Path], RuntimeApi]
ReloadGuard = Callable[[Path], AbstractContextManager[object]]
#: Seconds to wait for the master CLI when reading statistics (heartbeats are short).
MASTER_CLI_TIMEOUT = 2.0


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

    def facts(self) -> ConfigFacts | None:
        text = self.running_config
        return None if text is None else read_config_facts(text, self.directory)

    def runtime(self) -> RuntimeApi | None:
        """The runtime API of the running configuration, if it names one."""
        facts = self.facts()
        if facts is None or facts.runtime_socket is None:
            return None
        return self._runtime_api(facts.runtime_socket)

    def master_pid(self) -> int | None:
        return self._host.haproxy_master_pid(self.files)

    def master_cli(self) -> MasterCli:
        return MasterCli.at(self.files.master_socket, MASTER_CLI_TIMEOUT)

    def apply(self, config_text: str, reload_guard: ReloadGuard | None = None) -> ApplyOutcome:
        """Make HAProxy run ``config_text``; see the module docstring for how."""
        facts = read_config_facts(config_text, self.directory)
        if facts.runtime_socket is None:
            raise InvalidRenderedConfig(
                "The rendered configuration cannot be managed.",
                "the global section has no unix 'stats socket ... level admin'",
            )
        self._check_fd_limit(facts)
        self.directory.mkdir(parents=True, exist_ok=True)
        candidate = self.directory / "haproxy.cfg.candidate"
        _write(candidate, config_text)
        try:
            self._host.validate_haproxy_config(candidate, self.directory)
        except BaseException:
            candidate.unlink(missing_ok=True)
            raise
        _ensure_state_file(facts)
        old_text = self.running_config
        if self.master_pid() is None:
            os.replace(candidate, self.files.config)
            self._host.start_haproxy(self.files, self.namespace)
            return ApplyOutcome.STARTED
        if old_text == config_text:
            candidate.unlink()
            return ApplyOutcome.UNCHANGED
        changes = None if old_text is None else runtime_only_changes(old_text, config_text)
        if changes is not None and self._apply_at_runtime(facts, changes):
            os.replace(candidate, self.files.config)
            self.runtime_changes += 1
            return ApplyOutcome.RUNTIME_API
        self._save_server_state()
        old_facts = None if old_text is None else read_config_facts(old_text, self.directory)
        old_socket = None if old_facts is None else old_facts.runtime_socket
        previous = self.directory / "haproxy.cfg.previous"
        if old_text is not None:
            _write(previous, old_text)
        os.replace(candidate, self.files.config)
        guard: AbstractContextManager[object] = (
            nullcontext()
            if reload_guard is None or old_socket is None
            else reload_guard(old_socket)
        )
        try:
            with guard:
                self._host.reload_haproxy(self.files)
        except BaseException:
            if old_text is not None:
                os.replace(previous, self.files.config)
            raise
        self.reloads += 1
        return ApplyOutcome.RELOADED

    def ensure_running(self) -> bool:
        """Start HAProxy again on the installed file if its master is gone; True if it did."""
        if self.running_config is None or self.master_pid() is not None:
            return False
        facts = self.facts()
        if facts is not None:
            _ensure_state_file(facts)
        self._host.start_haproxy(self.files, self.namespace)
        self.restarts += 1
        return True

    def stop(self) -> None:
        """Stop HAProxy (dropping connections) and keep the files. Idempotent."""
        self._host.stop_haproxy(self.files)

    def _check_fd_limit(self, facts: ConfigFacts) -> None:
        """Refuse a maxconn HAProxy could not start with here (``haproxy -c`` does not know)."""
        limit = self._host.haproxy_fd_limit()
        if limit is None or facts.global_maxconn is None:
            return
        allowed = max_connections_for(limit)
        if facts.global_maxconn > allowed:
            raise InvalidRenderedConfig(
                "The load balancer asks for more connections than its host allows.",
                f"global maxconn {facts.global_maxconn} needs more than the {limit} file "
                f"descriptors HAProxy may open on this host; render at most {allowed}",
            )

    def _apply_at_runtime(self, facts: ConfigFacts, changes: list[ServerChange]) -> bool:
        assert facts.runtime_socket is not None
        api = self._runtime_api(facts.runtime_socket)
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

    def _save_server_state(self) -> None:
        """Dump runtime server state where the running config loads it from at start-up."""
        facts = self.facts()
        if facts is None or facts.runtime_socket is None or facts.server_state_file is None:
            return
        try:
            state = self._runtime_api(facts.runtime_socket).show_servers_state()
        except RuntimeApiError as exc:
            log.warning("could not save server state of %s: %s", self.directory, exc)
            return
        _write(facts.server_state_file, state)


def _ensure_state_file(facts: ConfigFacts) -> None:
    """HAProxy warns at start-up about a missing state file; an empty one says "version 1"."""
    path = facts.server_state_file
    if path is not None and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, "1\n")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
