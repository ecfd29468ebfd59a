"""Starting lbaas processes inside a lab's namespaces (the lab's only use of ``subprocess``).

A process joins a namespace with ``nsenter --net`` rather than ``ip netns exec``: the latter
gives it a fresh mount namespace of its own (a slave of the caller's), where the namespaces
an agent creates for its amphorae (``ip netns add`` bind-mounts them under /run/netns)
would be visible to that agent alone, and neither ``lab down`` nor HAProxy's ``ip netns
exec`` could find them. A host's long-running processes (``start``) also enter the host's
own mount namespace (``lbaas.lab.mounts``: private state, sockets and /tmp; /run/netns
still the machine's); one-shot commands and probes are the operator's and see the
machine's files. ``nsenter`` execs the program, so the pid it is started with is the
program's, which the lab registers.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from lbaas.lab.base import LabError
from lbaas.lab.mounts import enter_options
from lbaas.private_files import FILE_MODE

_POLL = 0.1


def in_namespace(namespace: str, argv: Sequence[str]) -> list[str]:
    """``argv`` in ``namespace``'s network namespace only (the operator's commands)."""
    return ["nsenter", f"--net=/run/netns/{namespace}", "--", *argv]


def on_host(namespace: str, argv: Sequence[str], cwd: Path) -> list[str]:
    """``argv`` as a process of lab host ``namespace``: its network and mount namespaces."""
    net = f"--net=/run/netns/{namespace}"
    return ["nsenter", net, *enter_options(namespace, cwd), "--", *argv]


def _environment(extra: Mapping[str, str]) -> dict[str, str]:
    # The lab's settings file is the whole configuration: the caller's LBAAS_* variables
    # (a test's, a user's shell) must not leak into the lab's processes.
    env = {key: value for key, value in os.environ.items() if not key.startswith("LBAAS_")}
    return {**env, **extra}


def code_environment(tree: str) -> dict[str, str]:
    """The variables that make ``python -m lbaas.cli`` run the code of ``tree`` (a source
    tree of another commit: a rolling upgrade's old or new code); none for "", the lab's
    own code (this process's PYTHONPATH, inherited).

    ``-m`` puts the working directory ahead of PYTHONPATH: a command run from a checkout
    would import the checkout's ``lbaas``. The one-shot commands below therefore work in
    the tree they are given (``_working_directory``); a host's processes work in its own
    directory, which holds no code."""
    return {"PYTHONPATH": tree} if tree else {}


def _working_directory(env: Mapping[str, str] | None) -> str | None:
    """A one-shot command's working directory: the code tree it runs, if any."""
    return (env or {}).get("PYTHONPATH") or None


def run_to_end(
    namespace: str,
    argv: Sequence[str],
    *,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``argv`` inside ``namespace`` and raise LabError when it fails."""
    run_all_to_end(namespace, [argv], timeout=timeout, env=env)


def run_all_to_end(
    namespace: str,
    commands: Sequence[Sequence[str]],
    *,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``commands`` side by side inside ``namespace``; LabError when any fails.
    ``env`` adds variables (``code_environment``: another code tree).

    Side by side because each is a Python start-up (a second or more on a busy machine)
    and the lab runs one per host (``lbaas agent enrol``)."""
    started: list[tuple[Sequence[str], subprocess.Popen[str]]] = []
    try:
        for argv in commands:
            process = subprocess.Popen(
                in_namespace(namespace, argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_environment(env or {}),
                cwd=_working_directory(env),
            )
            started.append((argv, process))
        deadline = time.monotonic() + timeout
        for argv, process in started:
            _, stderr = process.communicate(timeout=max(0.0, deadline - time.monotonic()))
            if process.returncode != 0:
                raise LabError(f"{' '.join(argv)} failed ({process.returncode}): {stderr.strip()}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"cannot run {len(commands)} command(s) in {namespace}: {exc}") from exc
    finally:
        for _, process in started:  # after a failure, leave none running
            if process.poll() is None:
                process.kill()
                process.wait()


def output_of(
    namespace: str,
    argv: Sequence[str],
    *,
    timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
) -> str:
    """What ``argv`` run inside ``namespace`` prints; LabError when it fails."""
    try:
        done = subprocess.run(
            in_namespace(namespace, argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_environment(env or {}),
            cwd=_working_directory(env),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"cannot run {' '.join(argv)} in {namespace}: {exc}") from exc
    if done.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def start(
    namespace: str,
    argv: Sequence[str],
    log: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
) -> int:
    """Start ``argv`` inside ``namespace`` in a session of its own, output to ``log``; its pid.
    ``env`` adds variables (``LBAAS_CONFIG``: a settings file of the host's own).

    The process outlives the caller (``lbaas lab up`` returns while it runs); the lab kills
    it by pid. A thread waits for it so it is reaped if it dies while the caller lives.
    """
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        process = _popen(namespace, argv, fd, cwd, env or {})
    finally:
        os.close(fd)
    threading.Thread(target=process.wait, name=f"lab-reaper-{process.pid}", daemon=True).start()
    return process.pid


def _popen(
    namespace: str, argv: Sequence[str], fd: int, cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            on_host(namespace, argv, cwd),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=_environment(env),
            start_new_session=True,
        )
    except OSError as exc:  # nsenter missing, say: the lab's error, not a traceback
        raise LabError(f"cannot start {' '.join(argv)} in {namespace}: {exc}") from exc


def listening(namespace: str, host: str, port: int) -> bool:
    """True when a TCP connection to ``host:port`` from inside ``namespace`` is accepted."""
    probe = f": </dev/tcp/{host}/{port}"
    done = subprocess.run(
        in_namespace(namespace, ["bash", "-c", probe]), capture_output=True, check=False
    )
    return done.returncode == 0


def wait_listening(namespace: str, host: str, port: int, log: Path, timeout: float) -> None:
    """Wait until ``host:port`` accepts inside ``namespace``; LabError with the log's tail."""
    deadline = time.monotonic() + timeout
    while not listening(namespace, host, port):
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise LabError(f"nothing listens on {host}:{port} in {namespace}; {log}:\n{tail}")
        time.sleep(_POLL)


def exec_in(namespace: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace this process with ``argv`` inside ``namespace`` (``lbaas lab exec``)."""
    full = in_namespace(namespace, argv)
    os.execvpe(full[0], full, {**os.environ, **env})
