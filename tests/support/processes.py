"""Running lbaas commands as real processes in tests, and always stopping them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lbaas.host.socket_activation import spawn_activated


def lbaas_env(settings: Mapping[str, Any], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment variables LBAAS_<SECTION>__<FIELD> for a nested settings dict."""
    env = dict(os.environ if base is None else base)
    env = {k: v for k, v in env.items() if not k.startswith("LBAAS_")}

    def walk(prefix: str, tree: Mapping[str, Any]) -> None:
        for key, value in tree.items():
            name = f"{prefix}{key.upper()}"
            if isinstance(value, Mapping):
                walk(name + "__", value)
            else:
                env[name] = value if isinstance(value, str) else json.dumps(value)

    walk("LBAAS_", settings)
    return env


@contextmanager
def lbaas_process(
    args: list[str],
    env: Mapping[str, str],
    log_path: Path,
    listening: socket.socket | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``python -m lbaas.cli <args>``; kill it (and log where) when the block ends.
    ``listening``: passed to it as systemd's socket activation does."""
    log = open(log_path, "ab")  # noqa: SIM115 - closed in finally
    argv = [sys.executable, "-m", "lbaas.cli", *args]
    if listening is not None:
        proc = spawn_activated(listening, argv, env, output=log)
    else:
        proc = subprocess.Popen(
            argv, env=dict(env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        log.close()


def stop_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM the process group ``proc`` leads (uwsgi's master and workers), SIGKILL it
    after 10 s, and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
