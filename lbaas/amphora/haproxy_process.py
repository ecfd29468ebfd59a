"""One HAProxy per amphora, changed the least disruptive way.

``HaproxyInstance.apply`` is the agent's whole policy for a new configuration text:

1. write it next to the running file, followed by the agent's own global section, and check
   it with the real ``haproxy -c`` (and its global ``maxconn`` against the file descriptors
   this host allows, which ``-c`` does not check); a refusal is ``InvalidRenderedConfig``
   and the running HAProxy is left untouched;
   (skipped for a spare's placeholder HAProxy: its reload is the check, see
   ``_runs_placeholder``);
2. no HAProxy running: install the file and start one (master-worker);
3. the running worker loaded a text with the same ``fixed_digest`` and the same servers:
   nothing at all (a repeated PUT is a no-op; the file is brought up to date);
4. only server weights or ``disabled`` differ (``runtime_changes``): change them through the
   runtime API and install the file, so a later reload or restart keeps them. No reload;
5. anything else: save the servers' runtime state to the server-state file, install the file
   and reload seamlessly through the master, then check that the new worker loaded it. If
   that fails the previous file is put back. The caller may wrap the reload in a
   ``ReloadGuard``, given the runtime socket of the worker being replaced (the statistics
   use it to read that worker to its end).

"Running" is read from HAProxy, never from the file on disk: an agent killed after installing
a file and before reloading left a file HAProxy never loaded, and comparing with the file made
its retry (and every resync) answer "unchanged" while the new listener was never served. The
agent's section sets ``LBAAS_LOADED`` to the text's ``fixed_digest`` with ``setenv``; a worker
inherits it from the master that parsed that very text, and the master CLI reads it back
(``@!<pid> show env``). The facts stored beside the file (``haproxy.facts.json``: socket,
state file, maxconn, servers) count only while their digest is the one the worker loaded, and
they are removed while runtime API changes are under way, so an agent killed in the middle
leaves "unknown", which means a reload. As root, the same section holds ``user``/``group``:
workers drop to the dedicated user once the master has bound the listeners.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from enum import StrEnum
from pathlib import Path

from lbaas.amphora.runtime_changes import ServerChange, runtime_only_changes
from lbaas.errors import InvalidRenderedConfig
from lbaas.host.base import HaproxyFiles, HaproxyReloadFailed, HostOps
from lbaas.host.daemons import log_tail
from lbaas.host.runtime_api import MasterCli, RuntimeApi, RuntimeApiError
from lbaas.private_files import make_private_directory, write_private
from lbaas.wire.amphora import HaproxyFacts

log = logging.getLogger(__name__)

RuntimeApiFactory = Callable[[Path], RuntimeApi]
ReloadGuard = Callable[[Path], AbstractContextManager[object]]
#: Seconds to wait for the master CLI when reading statistics (heartbeats are short).
MASTER_CLI_TIMEOUT = 2.0
#: The facts of the installed configuration, beside it in the amphora's directory.
FACTS_FILE = "haproxy.facts.json"
#: Set by the agent's own section of every installed file: what a worker loaded.
LOADED_VARIABLE = "LBAAS_LOADED"
#: The digest a spare slot's placeholder configuration is loaded under (``spare_slot``).
PLACEHOLDER_DIGEST = "lbaas-spare-placeholder"
#: The comment that opens the agent's own section at the end of an installed file.
AGENT_SECTION_MARK = "\n# lbaas agent: what this HAProxy loaded and whom it runs as\n"
# HAProxy needs two descriptors per connection plus some for listeners, logs and sockets.
FD_RESERVE = 100


def max_connections_for(fd_limit: int) -> int:
    """The largest global ``maxconn`` HAProxy can start with under ``fd_limit``."""
    return max((fd_limit - FD_RESERVE) // 2, 0)


def agent_section(digest: str, run_as: tuple[str, str] | None) -> str:
    """The agent's own global section, appended to the tenant text it installs.

    ``setenv`` puts the text's digest into every worker's environment, where the master
    CLI's ``show env`` reads it back: the one record of what HAProxy loaded that a crash
    cannot leave stale. ``user``/``group`` make the workers drop root after the master
    has bound every listener.
    """
    lines = ["global", f"    setenv {LOADED_VARIABLE} {digest}"]
    if run_as is not None:
        lines += [f"    user {run_as[0]}", f"    group {run_as[1]}"]
    return AGENT_SECTION_MARK + "\n".join(lines) + "\n"


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
        """The tenant text of the installed file (without the agent's own section)."""
        installed = self._installed_text()
        return None if installed is None else installed.split(AGENT_SECTION_MARK, 1)[0]

    @property
    def running_facts(self) -> HaproxyFacts | None:
        """The stored facts, if they describe what HAProxy runs now; else None.

        The stored facts are trusted only while the running worker's ``LBAAS_LOADED``
        (set by the file it was started from) is their ``fixed_digest``: a file installed
        but never loaded (an agent killed before its reload) does not count. They are
        removed while runtime API changes are under way, so a crash between those changes
        and the install also reads as unknown, which means a reload.
        """
        stored = self._stored_facts()
        if stored is None:
            return None
        loaded = self._host.haproxy_loaded_value(self.files, LOADED_VARIABLE)
        if loaded != stored.fixed_digest:
            log.warning(
                "haproxy in %s runs %s, not the installed %s: it will be reloaded",
                self.directory,
                loaded,
                stored.fixed_digest,
            )
            return None
        return stored

    def _stored_facts(self) -> HaproxyFacts | None:
        try:
            return HaproxyFacts.model_validate_json(self._facts_file.read_bytes())
        except (OSError, ValueError) as exc:
            if not isinstance(exc, FileNotFoundError):
                log.warning("unreadable %s in %s: %s", FACTS_FILE, self.directory, exc)
            return None

    def _installed_text(self) -> str | None:
        try:
            return self.files.config.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None

    def _check_loaded(self, facts: HaproxyFacts) -> None:
        """Raise unless the running worker loaded the configuration of ``facts``."""
        loaded = self._host.haproxy_loaded_value(self.files, LOADED_VARIABLE)
        if loaded != facts.fixed_digest:
            raise HaproxyReloadFailed(
                f"haproxy runs {loaded}, not the configuration just installed "
                f"({facts.fixed_digest})",
                log_tail(self.files.log_file),
            )

    def runtime(self) -> RuntimeApi | None:
        """The runtime API of the running configuration, if its facts are known."""
        facts = self._stored_facts()
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
        make_private_directory(self.directory)
        candidate = self.directory / "haproxy.cfg.candidate"
        text = config_text + agent_section(facts.fixed_digest, self._host.haproxy_run_as())
        write_private(candidate, text)
        placeholder = self._runs_placeholder()
        if not placeholder:
            self._validate(candidate)
        self._ensure_state_file(facts)
        if self.master_pid() is None:
            self._install(candidate, facts)
            self._host.start_haproxy(self.files, self.namespace)
            self._check_loaded(facts)
            return ApplyOutcome.STARTED
        running = self.running_facts
        if running is not None and running.fixed_digest == facts.fixed_digest:
            changes = runtime_only_changes(running, facts)
            if changes == []:
                self._install(candidate, facts)  # comments may differ; nothing that runs
                return ApplyOutcome.UNCHANGED
            if changes is not None and self._apply_at_runtime(facts, changes):
                self._install(candidate, facts)
                self.runtime_changes += 1
                return ApplyOutcome.RUNTIME_API
        try:
            self._reload(candidate, facts, reload_guard)
        except HaproxyReloadFailed:
            if placeholder:  # unchecked: say whether the text was at fault
                write_private(candidate, text)
                self._validate(candidate)
                candidate.unlink(missing_ok=True)
            raise
        return ApplyOutcome.RELOADED

    def _validate(self, candidate: Path) -> None:
        """``haproxy -c`` on ``candidate``, which is removed if refused."""
        try:
            self._host.validate_haproxy_config(candidate, self.directory)
        except BaseException:
            candidate.unlink(missing_ok=True)
            raise

    def _runs_placeholder(self) -> bool:
        """Whether this is a spare's HAProxy, running its placeholder (``spare_slot``).

        Its first real configuration skips ``haproxy -c``: the reload parses the text
        anyway, and a master whose reload fails keeps its placeholder worker, which
        serves nobody, so the check before the change protects nothing here. It is run
        only when that reload fails, to tell a refused text (422) from anything else.
        """
        stored = self._stored_facts()
        return (
            stored is not None
            and stored.fixed_digest == PLACEHOLDER_DIGEST
            and self.master_pid() is not None
        )

    def _reload(
        self, candidate: Path, facts: HaproxyFacts, reload_guard: ReloadGuard | None
    ) -> None:
        """Install ``candidate`` and reload; put the previous file back if that fails.

        Only an ``Exception`` restores: a dying agent (``BaseException``) tidies nothing,
        as after SIGKILL, and the next apply compares with what HAProxy loaded anyway.
        """
        old_text, old_facts = self._installed_text(), self._stored_facts()
        self._save_server_state(old_facts)
        previous = self.directory / "haproxy.cfg.previous"
        if old_text is not None:
            write_private(previous, old_text)
        self._install(candidate, facts)
        guard: AbstractContextManager[object] = (
            nullcontext()
            if reload_guard is None or old_facts is None
            else reload_guard(self._socket(old_facts))
        )
        try:
            with guard:
                self._host.reload_haproxy(self.files)
            self._check_loaded(facts)
        except Exception:
            if old_text is not None:
                os.replace(previous, self.files.config)
                self._restore_facts(old_facts)
            raise
        self.reloads += 1

    def ensure_running(self) -> bool:
        """Start HAProxy again on the installed file if its master is gone; True if it did."""
        if self.running_config is None or self.master_pid() is not None:
            return False
        facts = self._stored_facts()
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
        write_private(self._facts_file, facts.model_dump_json())

    def _restore_facts(self, facts: HaproxyFacts | None) -> None:
        if facts is None:
            self._facts_file.unlink(missing_ok=True)
        else:
            write_private(self._facts_file, facts.model_dump_json())

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
        # From the first change on, the stored facts no longer describe what runs.
        self._facts_file.unlink(missing_ok=True)
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
        write_private(self.directory / facts.server_state_file, state)

    def _ensure_state_file(self, facts: HaproxyFacts) -> None:
        """HAProxy warns at start-up about a missing state file; an empty one says "version 1"."""
        if facts.server_state_file is None:
            return
        path = self.directory / facts.server_state_file
        if not path.exists():
            make_private_directory(path.parent)
            write_private(path, "1\n")
