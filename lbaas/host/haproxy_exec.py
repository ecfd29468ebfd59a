"""Running HAProxy in master-worker mode: the process half shared by real and loopback.

Both host implementations run HAProxy the same way; they differ only in whether the command
is prefixed with ``ip netns exec <ns>``. HAProxy runs in the foreground (``-W``) as a child
of the agent in its own session (``daemons``: the agent reaps it and its orphans, since
this host's PID 1 may not, and a zombie must never look alive), and its output goes to a
log file whose tail explains failures. A master found through its pid file after an agent restart is adopted:
it counts as alive while ``/proc`` shows a non-zombie process whose command line names the
same configuration file.

Reloads go through the master CLI (``reload``), falling back to SIGUSR2, and are confirmed
through ``show proc``: the master's reload count moves and a new worker appears. The master
hands the listening sockets to the new worker, so nothing is refused while it starts.
"""

from __future__ import annotations

import grp
import os
import pwd
import resource
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from lbaas.errors import InvalidRenderedConfig
from lbaas.host.base import (
    HaproxyFiles,
    HaproxyReloadFailed,
    HaproxyStartFailed,
    HostCommandFailed,
    HostOps,
    HostOpsError,
)
from lbaas.host.commands import decode_output, run_command
from lbaas.host.daemons import DAEMONS, Daemons, log_tail
from lbaas.host.runtime_api import MasterCli, ProcTable, RuntimeApiError

_POLL = 0.05
#: The user and group HAProxy's workers run as when the agent is root (Debian's package
#: creates them; the agent creates them where they are missing).
HAPROXY_USER = "haproxy"
# How long a process's command line may read empty while it calls exec().
_EXEC_WINDOW = 0.5


class HaproxyLauncher:
    """Validates, starts, reloads and stops HAProxy masters; remembers its children."""

    def __init__(
        self,
        binary: str = "haproxy",
        *,
        start_timeout: float = 20.0,
        reload_timeout: float = 20.0,
        stop_timeout: float = 10.0,
        daemons: Daemons = DAEMONS,
    ) -> None:
        self.binary = binary
        self._start_timeout = start_timeout
        self._reload_timeout = reload_timeout
        self._stop_timeout = stop_timeout
        self._daemons = daemons
        self._last_pid: dict[Path, int] = {}
        self._run_as: tuple[str, str] | None = None

    def validate(self, config: Path, workdir: Path) -> None:
        argv = [self.binary, "-c", "-f", str(config.absolute())]
        done = run_command(argv, cwd=workdir, timeout=60)
        if done.returncode != 0:
            raise InvalidRenderedConfig(
                "HAProxy refused the rendered configuration.",
                operator_message=(done.stdout + done.stderr).strip(),
            )

    def version(self) -> str:
        argv = [self.binary, "-v"]
        done = run_command(argv)
        words = done.stdout.split()
        if done.returncode != 0 or len(words) < 3:
            raise HostCommandFailed(argv, done.returncode, done.stderr or done.stdout)
        return words[2]

    def start(self, files: HaproxyFiles, prefix: Sequence[str] = ()) -> int:
        running = self.master_pid(files)
        if running is not None:
            return running
        files.pid_file.unlink(missing_ok=True)
        argv = [
            *prefix,
            self.binary,
            "-W",
            "-S",
            f"{files.master_socket.absolute()},mode,600",
            "-p",
            str(files.pid_file.absolute()),
            "-f",
            str(files.config.absolute()),
        ]
        try:
            pid = self._daemons.spawn(argv, files.log_file, cwd=files.workdir)
        except OSError as exc:
            raise HaproxyStartFailed(f"cannot run {argv[0]}: {exc}") from exc
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            code = self._daemons.exit_code(pid)
            if code is not None:
                raise HaproxyStartFailed(f"haproxy exited with {code}", log_tail(files.log_file))
            table = _try_show_proc(files)
            if table is not None and table.current_workers:
                return table.master.pid
            time.sleep(_POLL)
        self._kill(pid)
        raise HaproxyStartFailed(
            "haproxy did not answer on its master socket", log_tail(files.log_file)
        )

    def reload(self, files: HaproxyFiles) -> None:
        pid = self.master_pid(files)
        if pid is None:
            raise HaproxyReloadFailed("no haproxy master is running")
        before = _try_show_proc(files)
        if before is None:
            raise HaproxyReloadFailed("the haproxy master socket does not answer")
        try:
            MasterCli.at(files.master_socket).reload()
        except RuntimeApiError:
            os.kill(pid, signal.SIGUSR2)
        old_pids = {w.pid for w in before.workers}
        deadline = time.monotonic() + self._reload_timeout
        while time.monotonic() < deadline:
            if self.master_pid(files) is None:
                raise HaproxyReloadFailed("haproxy master died", log_tail(files.log_file))
            table = _try_show_proc(files)
            if table is not None and table.master.reloads > before.master.reloads:
                if table.failed_reloads > before.failed_reloads:
                    raise HaproxyReloadFailed("haproxy failed to reload", log_tail(files.log_file))
                if any(w.pid not in old_pids for w in table.current_workers):
                    return
            time.sleep(_POLL)
        raise HaproxyReloadFailed("haproxy did not start new workers", log_tail(files.log_file))

    def loaded_value(self, files: HaproxyFiles, name: str) -> str | None:
        """``name`` in the current worker's environment, asked through the master CLI."""
        if self.master_pid(files) is None:
            return None
        cli = MasterCli.at(files.master_socket, timeout=5.0)
        try:
            current = cli.show_proc().current_workers
            if len(current) != 1:
                return None
            return cli.worker_environment(current[0].pid, name)
        except RuntimeApiError:
            return None

    def run_as(self) -> tuple[str, str] | None:
        """As root: the dedicated user and group, created if missing (once per launcher)."""
        if os.geteuid() != 0:
            return None
        if self._run_as is None:
            self._run_as = ensure_system_user(HAPROXY_USER)
        return self._run_as

    def stop(self, files: HaproxyFiles) -> None:
        pid = self.master_pid(files)
        if pid is not None:
            workers = _children_of(pid)
            _signal(pid, signal.SIGTERM)
            # A stopped (hung) HAProxy only acts on SIGTERM once it runs again.
            for victim in (pid, *workers):
                _signal(victim, signal.SIGCONT)
            if not self._wait_dead([pid, *workers], self._stop_timeout, files):
                for victim in (pid, *workers):
                    _signal(victim, signal.SIGKILL)
                if not self._wait_dead([pid, *workers], self._stop_timeout, files):
                    raise HostOpsError(f"haproxy {pid} of {files.config} will not die")
        files.pid_file.unlink(missing_ok=True)

    def master_pid(self, files: HaproxyFiles) -> int | None:
        try:
            pid: int | None = int(files.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            # A master re-executing for a reload rewrites its pid file: missing or empty
            # may only mean "being rewritten", so the pid last seen here is checked.
            pid = self._last_pid.get(files.pid_file)
        if pid is None or not self._alive(pid, files):
            self._last_pid.pop(files.pid_file, None)
            return None
        self._last_pid[files.pid_file] = pid
        return pid

    def _alive(self, pid: int, files: HaproxyFiles | None) -> bool:
        alive = self._daemons.alive(pid)
        if alive is not None:
            return alive
        return _proc_alive(pid, None if files is None else str(files.config.absolute()))

    def _wait_dead(self, pids: list[int], timeout: float, files: HaproxyFiles) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not any(self._alive(p, files if p == pids[0] else None) for p in pids):
                return True
            time.sleep(_POLL)
        return False

    def _kill(self, pid: int) -> None:
        _signal(pid, signal.SIGKILL)
        self._daemons.wait(pid, self._stop_timeout)


def ensure_system_user(name: str) -> tuple[str, str]:
    """A system user and group ``name`` (no home, no login shell), created if missing."""
    try:
        grp.getgrnam(name)
    except KeyError:
        _must_run(["groupadd", "--system", name])
    try:
        pwd.getpwnam(name)
    except KeyError:
        _must_run(
            [
                "useradd",
                "--system",
                "--gid",
                name,
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ]
        )
    return name, name


def _must_run(argv: list[str]) -> None:
    done = run_command(argv)
    if done.returncode != 0:
        raise HostCommandFailed(argv, done.returncode, done.stderr)


def _try_show_proc(files: HaproxyFiles) -> ProcTable | None:
    try:
        return MasterCli.at(files.master_socket, timeout=2.0).show_proc()
    except RuntimeApiError:
        return None


def _proc_alive(pid: int, needle: str | None) -> bool:
    """Whether ``pid`` runs and, given a ``needle``, has it among its arguments.

    A master re-executing itself for a reload shows an empty command line for a moment
    (the kernel has swapped its memory but not yet set up the new arguments), so an
    empty one is read again before the process is judged to be someone else.
    """
    deadline = time.monotonic() + _EXEC_WINDOW
    while True:
        try:
            stat = decode_output(Path(f"/proc/{pid}/stat").read_bytes())
            cmdline = decode_output(Path(f"/proc/{pid}/cmdline").read_bytes())
        except OSError:
            return False
        state = stat.rsplit(")", 1)[-1].split()[0]
        if state in ("Z", "X"):
            return False
        if needle is None:
            return True
        if cmdline or time.monotonic() >= deadline:
            return _names_file(cmdline.split("\0"), needle)
        time.sleep(_POLL / 10)


def _names_file(args: list[str], path: str) -> bool:
    """Whether ``args`` name ``path``, as written or through links: an amphora made from
    a spare (``lbaas.amphora.spare_slot``) runs a HAProxy started on the spare's paths,
    which a link now shares with the amphora's directory."""
    if path in args:
        return True
    real = os.path.realpath(path)
    configs = [after for before, after in zip(args, args[1:], strict=False) if before == "-f"]
    return any(os.path.realpath(config) == real for config in configs)


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # A process name (comm) may hold any bytes.
            stat = decode_output((entry / "stat").read_bytes())
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry.name))
    return found


_CAP_SYS_RESOURCE = 24


def _may_raise_limits() -> bool:
    """Whether this process (and so HAProxy) holds CAP_SYS_RESOURCE."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYS_RESOURCE & 1)
    except (OSError, ValueError):
        pass
    return False


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


class LaunchingHostOps(HostOps):
    """The HAProxy half of ``HostOps`` for implementations that run real processes."""

    def __init__(self, launcher: HaproxyLauncher) -> None:
        self.launcher = launcher

    def namespace_prefix(self, namespace: str | None) -> list[str]:
        """The argv prefix that runs a command inside ``namespace`` (or refuses it)."""
        raise NotImplementedError

    def validate_haproxy_config(self, config: Path, workdir: Path) -> None:
        self.launcher.validate(config, workdir)

    def start_haproxy(self, files: HaproxyFiles, namespace: str | None = None) -> int:
        return self.launcher.start(files, self.namespace_prefix(namespace))

    def reload_haproxy(self, files: HaproxyFiles) -> None:
        self.launcher.reload(files)

    def stop_haproxy(self, files: HaproxyFiles) -> None:
        self.launcher.stop(files)

    def haproxy_master_pid(self, files: HaproxyFiles) -> int | None:
        return self.launcher.master_pid(files)

    def haproxy_version(self) -> str:
        return self.launcher.version()

    def haproxy_loaded_value(self, files: HaproxyFiles, name: str) -> str | None:
        return self.launcher.loaded_value(files, name)

    def haproxy_run_as(self) -> tuple[str, str] | None:
        return self.launcher.run_as()

    def haproxy_fd_limit(self) -> int | None:
        return None if _may_raise_limits() else resource.getrlimit(resource.RLIMIT_NOFILE)[1]
