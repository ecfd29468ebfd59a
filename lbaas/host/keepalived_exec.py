"""Running keepalived inside amphora namespaces (``KeepalivedOps`` for real; root).

keepalived runs in the foreground (``--dont-fork``) as a child of the agent in its own
session (``daemons``, which also reaps the VRRP process a killed keepalived orphans), VRRP only (``--vrrp``), logging to a file in the amphora's directory, with pid
files there too so that any number of them run on one host. A keepalived found through its
pid file after an agent restart is adopted when ``/proc`` shows a live process whose
command line names the same configuration file. Reloads are SIGHUP, which keeps the VRRP
state: a MASTER stays MASTER through a configuration change.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from lbaas.errors import InvalidRenderedConfig
from lbaas.host.base import HostOpsError, KeepalivedFiles, KeepalivedOps
from lbaas.host.commands import decode_output, run_command
from lbaas.host.daemons import DAEMONS, Daemons, log_tail

_POLL = 0.05


class KeepalivedLauncher(KeepalivedOps):
    """Starts, reloads and stops keepalived processes; remembers its children."""

    def __init__(
        self,
        binary: str = "keepalived",
        ip_binary: str = "ip",
        *,
        timeout: float = 10.0,
        daemons: Daemons = DAEMONS,
    ) -> None:
        self.binary = binary
        self._ip = ip_binary
        self._timeout = timeout
        self._daemons = daemons
        self._started: dict[Path, int] = {}
        """The pid of the keepalived this launcher started for each configuration."""

    def _prefix(self, namespace: str) -> list[str]:
        return [self._ip, "netns", "exec", namespace]

    def validate(self, files: KeepalivedFiles, namespace: str) -> None:
        argv = [*self._prefix(namespace), self.binary, "--config-test", "-f", str(files.config)]
        done = run_command(argv, timeout=30)
        output = (done.stdout + done.stderr).strip()
        if done.returncode != 0 or output:
            raise InvalidRenderedConfig(
                "keepalived refused the rendered configuration.", operator_message=output
            )

    def start(self, files: KeepalivedFiles, namespace: str) -> int:
        running = self.pid(files)
        if running is not None:
            return running
        _clear_stale(files)
        argv = [
            *self._prefix(namespace),
            self.binary,
            "--dont-fork",
            "--vrrp",
            "--log-console",
            "--log-detail",
            "--use-file",
            str(files.config.absolute()),
            "--pid",
            str(files.pid_file.absolute()),
            "--vrrp_pid",
            str(files.vrrp_pid_file.absolute()),
        ]
        try:
            pid = self._daemons.spawn(argv, files.log_file)
        except OSError as exc:
            raise HostOpsError(f"cannot run {argv[0]}: {exc}") from exc
        self._started[files.config.absolute()] = pid
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            code = self._daemons.exit_code(pid)
            if code is not None:
                tail = log_tail(files.log_file)
                raise HostOpsError(f"keepalived exited with {code}: {tail}")
            # ``ip netns exec`` execs keepalived in place, so the child is keepalived.
            if _pid_in(files.vrrp_pid_file) is not None:
                return pid
            time.sleep(_POLL)
        raise HostOpsError(f"keepalived did not start its VRRP process: {log_tail(files.log_file)}")

    def reload(self, files: KeepalivedFiles) -> None:
        pid = self.pid(files)
        if pid is None:
            raise HostOpsError("no keepalived is running")
        os.kill(pid, signal.SIGHUP)

    def stop(self, files: KeepalivedFiles) -> None:
        pid = self.pid(files)
        if pid is not None:
            _signal(pid, signal.SIGTERM)
            if not self._wait_dead(pid, files):
                _signal(pid, signal.SIGKILL)
                vrrp = _pid_in(files.vrrp_pid_file)
                if vrrp is not None:
                    _signal(vrrp, signal.SIGKILL)
                if not self._wait_dead(pid, files):
                    raise HostOpsError(f"keepalived {pid} of {files.config} will not die")
        files.pid_file.unlink(missing_ok=True)
        files.vrrp_pid_file.unlink(missing_ok=True)

    def pid(self, files: KeepalivedFiles) -> int | None:
        pid = _pid_in(files.pid_file)
        if pid is None:  # not written yet: the one we started for it, if it runs
            pid = self._started.get(files.config.absolute())
        if pid is None or self._daemons.alive(pid) is False or not _names(pid, files.config):
            return None
        return pid

    def _wait_dead(self, pid: int, files: KeepalivedFiles) -> bool:
        """Whether ``pid`` ended (and, if it is our child, was reaped) within the timeout.

        An exiting process's command line reads empty before it is a zombie, so a child
        of ours counts as dead only once it has been waited for.
        """
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            alive = self._daemons.alive(pid)
            if alive is False or (alive is None and not _names(pid, files.config)):
                return True
            time.sleep(_POLL)
        return False


def _clear_stale(files: KeepalivedFiles) -> None:
    """Remove what a dead keepalived of ``files`` left, so a new one starts.

    keepalived refuses to start ("daemon is already running") while a pid in its pid
    files exists, and the VRRP child of a killed parent is an orphan that this host's
    PID 1 may never reap: its zombie keeps the pid alive. An orphan still running (it
    should have got SIGTERM from its parent's death) is killed, never left beside a
    second keepalived.
    """
    orphan = _pid_in(files.vrrp_pid_file)
    if orphan is not None and _names(orphan, files.config):
        _signal(orphan, signal.SIGKILL)
    files.pid_file.unlink(missing_ok=True)
    files.vrrp_pid_file.unlink(missing_ok=True)


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _names(pid: int, config: Path) -> bool:
    """Whether ``pid`` is a live process (not a zombie) run on ``config``."""
    try:
        stat = decode_output(Path(f"/proc/{pid}/stat").read_bytes())
        cmdline = decode_output(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
        return False
    return str(config.absolute()) in cmdline.split("\0")


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass
