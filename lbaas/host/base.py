"""The one narrow interface to everything the agent changes on its host.

Like Seesaw's NCC, privileged and process-spawning operations sit behind a single small
interface: network namespaces, links and addresses through ``ip``, and the HAProxy processes
(validate, start in master-worker mode, reload seamlessly, stop). The rest of the agent
decides *what* the host should look like and calls these methods; only the implementations
in this package run subprocesses. Three implementations exist: ``real`` (root, netns mode),
``loopback`` (no root: VIPs live on 127.0.0.0/8 and namespaces are refused) and ``recording``
(no processes at all, for unit tests).

Every method that creates or deletes is idempotent over its arguments: creating what exists
or deleting what is gone succeeds without change. Errors come from the family below, plus
``lbaas.errors.InvalidRenderedConfig`` when HAProxy refuses a configuration.

    HostOpsError
    ├── UnsupportedInMode      the implementation cannot do this (loopback has no netns)
    ├── HostCommandFailed      a command exited non-zero (.argv, .returncode, .stderr)
    ├── HaproxyStartFailed     HAProxy did not come up (.log_tail)
    └── HaproxyReloadFailed    the master did not load new workers (.log_tail)
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lbaas.errors import LbaasError
from lbaas.host.routing import RoutingOps


class HostOpsError(LbaasError):
    """A host operation failed."""


class UnsupportedInMode(HostOpsError):
    """This implementation refuses the operation (e.g. a namespace in loopback mode)."""


class HostCommandFailed(HostOpsError):
    """A command exited with a non-zero status."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)} exited {returncode}: {stderr.strip()}")
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stderr = stderr


class HaproxyStartFailed(HostOpsError):
    """HAProxy exited or did not answer on its master socket after being started."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(f"{message}: {log_tail.strip()}" if log_tail.strip() else message)
        self.log_tail = log_tail


class HaproxyReloadFailed(HostOpsError):
    """The HAProxy master was not running or did not start workers from the new file."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(f"{message}: {log_tail.strip()}" if log_tail.strip() else message)
        self.log_tail = log_tail


@dataclass(frozen=True)
class HaproxyFiles:
    """The files of one HAProxy instance; they all live in its amphora's directory."""

    workdir: Path
    config: Path
    pid_file: Path
    master_socket: Path
    log_file: Path

    @classmethod
    def in_directory(cls, directory: Path) -> HaproxyFiles:
        """The standard file names inside an amphora's directory."""
        return cls(
            workdir=directory,
            config=directory / "haproxy.cfg",
            pid_file=directory / "haproxy.pid",
            master_socket=directory / "master.sock",
            log_file=directory / "haproxy.log",
        )


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


class HostOps(RoutingOps):
    """Changes to the host: namespaces, links, addresses and HAProxy processes.

    The routing calls (MTU, per-leg tables, source rules, forwarding) are in ``routing``.
    """

    # --- network namespaces -------------------------------------------------------------

    @abc.abstractmethod
    def create_namespace(self, name: str) -> None:
        """Create network namespace ``name`` with its loopback link up.

        Idempotent (an existing namespace is kept). Raises UnsupportedInMode or
        HostCommandFailed.
        """

    @abc.abstractmethod
    def delete_namespace(self, name: str) -> None:
        """Delete namespace ``name`` and so every link inside it (veth peers go too).

        Processes still running inside keep it alive, so stop them first. Idempotent.
        Raises HostCommandFailed.
        """

    @abc.abstractmethod
    def namespace_exists(self, name: str) -> bool:
        """Whether namespace ``name`` exists. Changes nothing."""

    def rename_namespace(self, name: str, new_name: str, inside: int) -> None:
        """Give namespace ``name``, and whatever runs in it, the name ``new_name``;
        ``inside`` is the pid of a process in it (the caller knows one: finding one costs
        a scan of /proc).

        A spare amphora (``lbaas.amphora.spare_slot``) is prepared before its id is known;
        taking it renames its namespace to the amphora's. Not idempotent: ``name`` must
        exist and ``new_name`` must not. Raises UnsupportedInMode (the default: only netns
        mode has namespaces) or HostOpsError.
        """
        raise UnsupportedInMode(f"cannot rename namespace {name}: no namespaces here")

    @abc.abstractmethod
    def run_in_namespace(
        self, namespace: str, argv: Sequence[str], *, timeout: float = 30.0
    ) -> CommandResult:
        """Run ``argv`` inside ``namespace`` and return its result (for tests, diagnostics).

        A non-zero exit is returned, not raised. Changes whatever the command changes.
        Raises UnsupportedInMode, or HostCommandFailed if the command cannot be run at all.
        """

    # --- links --------------------------------------------------------------------------

    @abc.abstractmethod
    def create_bridge(self, name: str) -> None:
        """Create Linux bridge ``name`` in the host namespace and set it up. Idempotent.

        Raises UnsupportedInMode or HostCommandFailed.
        """

    @abc.abstractmethod
    def create_veth_pair(self, name: str, peer: str) -> None:
        """Create a veth pair ``name`` <-> ``peer`` in the host namespace.

        Idempotent if ``name`` exists already (wherever its peer is). Raises
        UnsupportedInMode or HostCommandFailed.
        """

    @abc.abstractmethod
    def delete_link(self, name: str, namespace: str | None = None) -> None:
        """Delete link ``name`` (a veth takes its peer along). Idempotent.

        Raises HostCommandFailed.
        """

    @abc.abstractmethod
    def link_exists(self, name: str, namespace: str | None = None) -> bool:
        """Whether link ``name`` exists in ``namespace`` (None: the host). Changes nothing."""

    @abc.abstractmethod
    def bridge_ports(self, bridge: str) -> list[str]:
        """Names of the links enslaved to ``bridge``; [] if it does not exist. No change."""

    @abc.abstractmethod
    def attach_to_bridge(self, name: str, bridge: str) -> None:
        """Enslave host link ``name`` to ``bridge``. Idempotent.

        Raises UnsupportedInMode or HostCommandFailed.
        """

    @abc.abstractmethod
    def move_to_namespace(self, name: str, namespace: str) -> None:
        """Move host link ``name`` into ``namespace``.

        Idempotent: a link already inside ``namespace`` stays. Raises UnsupportedInMode or
        HostCommandFailed.
        """

    @abc.abstractmethod
    def set_link_up(self, name: str, namespace: str | None = None) -> None:
        """Set link ``name`` administratively up. Idempotent. Raises HostCommandFailed."""

    @abc.abstractmethod
    def add_address(self, link: str, address: str, namespace: str | None = None) -> None:
        """Put ``address`` (CIDR form, ``10.0.0.5/24``) on ``link``. Idempotent.

        Raises UnsupportedInMode or HostCommandFailed.
        """

    @abc.abstractmethod
    def delete_address(self, link: str, address: str, namespace: str | None = None) -> None:
        """Remove ``address`` (CIDR form) from ``link``; absent address or link is fine.

        Raises HostCommandFailed.
        """

    def announce_address(self, link: str, address: str, namespace: str | None = None) -> None:
        """Tell ``link``'s neighbours that ``address`` (CIDR form) is now here (gratuitous
        ARP for IPv4, unsolicited NA for IPv6), so they stop sending to a MAC address it
        had before.

        Does nothing by default: loopback mode has no neighbours. Raises OSError or
        HostOpsError where it is done and fails; callers treat that as a warning.
        """

    # --- HAProxy ------------------------------------------------------------------------

    @abc.abstractmethod
    def validate_haproxy_config(self, config: Path, workdir: Path) -> None:
        """Run ``haproxy -c`` on ``config`` (relative paths resolve in ``workdir``).

        Changes nothing. Raises lbaas.errors.InvalidRenderedConfig carrying HAProxy's output
        as the operator message, or HostCommandFailed if HAProxy cannot be run.
        """

    @abc.abstractmethod
    def start_haproxy(self, files: HaproxyFiles, namespace: str | None = None) -> int:
        """Start HAProxy in master-worker mode on ``files.config``; return the master's pid.

        The master listens on ``files.master_socket`` and writes ``files.pid_file``; output
        goes to ``files.log_file``. With ``namespace`` it runs inside that namespace.
        Returns once the master answers with a worker. Idempotent: if a master for these
        files is running, its pid is returned and nothing is started. Raises
        HaproxyStartFailed or UnsupportedInMode.
        """

    @abc.abstractmethod
    def reload_haproxy(self, files: HaproxyFiles) -> None:
        """Make the running master load ``files.config`` again, seamlessly.

        New workers take over the listening sockets; old workers finish their established
        connections. Returns once the master has a new worker. Not idempotent: each call is a
        reload. Raises HaproxyReloadFailed (also when no master is running).
        """

    @abc.abstractmethod
    def stop_haproxy(self, files: HaproxyFiles) -> None:
        """Stop the master of ``files`` and all its workers, dropping their connections.

        Returns once they are gone. Idempotent. Raises HostOpsError if they will not die.
        """

    @abc.abstractmethod
    def haproxy_master_pid(self, files: HaproxyFiles) -> int | None:
        """The pid of the live master of ``files``, or None. Changes nothing."""

    @abc.abstractmethod
    def haproxy_loaded_value(self, files: HaproxyFiles, name: str) -> str | None:
        """Environment variable ``name`` of the current worker of the master of ``files``.

        That is what the configuration the worker was started from set with ``setenv``, so
        it tells what HAProxy actually loaded, whatever the file on disk says now. None if
        no master runs, it has no single current worker, or that worker does not answer.
        Changes nothing.
        """

    @abc.abstractmethod
    def haproxy_run_as(self) -> tuple[str, str] | None:
        """The (user, group) HAProxy's workers should drop to after binding, or None.

        None when the agent is not root (HAProxy then runs as the agent's own user). As
        root, the dedicated user and group are created first if they are missing.
        Raises HostCommandFailed if they cannot be created.
        """

    @abc.abstractmethod
    def haproxy_fd_limit(self) -> int | None:
        """Most file descriptors a HAProxy started here can get; None if it may raise it.

        HAProxy raises its own limit to fit its global ``maxconn`` when it is allowed to
        (CAP_SYS_RESOURCE); otherwise the inherited hard limit is final and a larger
        ``maxconn`` makes it exit at start-up although ``haproxy -c`` accepted the file.
        Changes nothing.
        """

    @abc.abstractmethod
    def haproxy_version(self) -> str:
        """The version HAProxy reports (``2.6.12-1``). Changes nothing.

        Raises HostCommandFailed if HAProxy cannot be run.
        """


@dataclass(frozen=True)
class KeepalivedFiles:
    """The files of one amphora's keepalived; they live in its amphora's directory."""

    config: Path
    pid_file: Path
    vrrp_pid_file: Path
    log_file: Path
    state_file: Path
    """The VRRP state keepalived last entered (MASTER, BACKUP, FAULT), by its notify."""

    @classmethod
    def in_directory(cls, directory: Path) -> KeepalivedFiles:
        return cls(
            config=directory / "keepalived.conf",
            pid_file=directory / "keepalived.pid",
            vrrp_pid_file=directory / "keepalived-vrrp.pid",
            log_file=directory / "keepalived.log",
            state_file=directory / "keepalived.state",
        )


class KeepalivedOps(abc.ABC):
    """keepalived processes, one per ACTIVE_STANDBY amphora, inside its namespace.

    Apart from HostOps because only netns mode has them (loopback has no VIP to move) and
    so a test can replace this part alone. Errors are those of HostOps: HostOpsError, and
    lbaas.errors.InvalidRenderedConfig for a configuration keepalived refuses.
    """

    @abc.abstractmethod
    def validate(self, files: KeepalivedFiles, namespace: str) -> None:
        """``keepalived --config-test`` inside ``namespace`` (it checks the links exist).

        Changes nothing. Raises InvalidRenderedConfig with keepalived's output.
        """

    @abc.abstractmethod
    def start(self, files: KeepalivedFiles, namespace: str) -> int:
        """Start keepalived (VRRP only) on ``files.config`` in ``namespace``; its pid.

        Idempotent: a running keepalived of these files is left alone. Raises HostOpsError.
        """

    @abc.abstractmethod
    def reload(self, files: KeepalivedFiles) -> None:
        """Make the running keepalived read its configuration again (SIGHUP).

        VRRP state is kept across the reload. Raises HostOpsError when none runs.
        """

    @abc.abstractmethod
    def stop(self, files: KeepalivedFiles) -> None:
        """Stop keepalived; a MASTER first hands the VIP over (priority 0). Idempotent."""

    @abc.abstractmethod
    def pid(self, files: KeepalivedFiles) -> int | None:
        """The pid of the live keepalived parent of ``files``, or None. Changes nothing."""
