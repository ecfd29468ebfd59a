"""The first hour with ``lbaas``: what an operator's first mistakes get back.

A second ``lbaas serve`` (or ``lbaas agent``) on a state directory in use is refused at
once, naming the first, and the lock a SIGKILLed serve held is gone for its restart; a
command that reads state refuses to read none, without making a directory; a taken port
or a malformed argument is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Served, free_port, serve
from tests.support.processes import lbaas_env

NOOP = {"providers": {"enabled": ["noop"], "default": "noop"}}


def _lbaas(args: list[str], settings: Mapping[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lbaas.cli", *args],
        env=lbaas_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command printed (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("lbaas: "), done.stderr
    return last


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, NOOP)


def test_a_second_owner_of_a_state_directory_is_refused_naming_the_first(
    served: Served,
) -> None:
    settings = {"state_dir": str(served.state_dir), "api": {"port": free_port()}, **NOOP}
    expected = (
        f"lbaas: state directory {served.state_dir} is in use by pid {served.pid} "
        "(lbaas serve): stop it first, or pass another --state-dir"
    )
    for command in (["serve"], ["agent"], ["cleanup"]):
        done = _lbaas(command, {**settings, "agent": {"port": free_port()}})
        assert _refused(done) == expected, command
        assert done.stderr.strip() == expected  # nothing started, so nothing else said


def test_a_restart_right_after_sigkill_takes_the_lock(tmp_path: Path) -> None:
    first = serve(tmp_path, NOOP)
    again = serve(tmp_path, NOOP)  # the same state directory
    try:
        killed = next(first)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.process.wait(10)
        restarted = next(again)  # answers: the dead holder's lock went with it
        lock = (restarted.state_dir / "lbaas.lock").read_text()
        assert lock == f"{restarted.pid} lbaas serve\n"
    finally:
        again.close()
        first.close()


@pytest.mark.parametrize("command", [["diagnose", "0" * 8], ["host", "list"], ["cleanup"]])
def test_reading_state_that_was_never_made_is_one_line(tmp_path: Path, command: list[str]) -> None:
    state = tmp_path / "nothing-here"
    done = _lbaas([*command, "--state-dir", str(state)], {})
    assert _refused(done) == (
        f"lbaas: no lbaas state at {state}: start `lbaas serve` first or pass --state-dir"
    )
    assert not state.exists()


def test_help_names_the_default_state_directory() -> None:
    done = _lbaas(["serve", "--help"], {})
    assert done.returncode == 0
    assert "/var/lib/lbaas as root" in " ".join(done.stdout.split())
    assert "$XDG_STATE_HOME/lbaas" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["10.0.0.0/33"], "lbaas: '10.0.0.0/33' is not a CIDR such as 10.0.0.0/24 or fd00::/64"),
        (["300.1.2.0/24"], "lbaas: '300.1.2.0/24' is not a CIDR such as 10.0.0.0/24 or fd00::/64"),
        (
            ["10.0.0.0/24", "--gateway", "10.0.0.x"],
            "lbaas: --gateway '10.0.0.x' is not an IP address",
        ),
        (
            ["10.0.0.0/24", "--gateway", "fd00::1"],
            "lbaas: --gateway fd00::1 is not an IPv4 address",
        ),
        (["10.0.0.0/24", "--id", "nope"], "lbaas: --id 'nope' is not a UUID"),
        (["10.0.0.0/24", "--network-id", "x"], "lbaas: --network-id 'x' is not a UUID"),
        (
            ["10.0.0.0/24", "--mtu", "10"],
            "lbaas: invalid subnet: mtu: Input should be greater than or equal to 68",
        ),
    ],
)
def test_a_malformed_subnet_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    state = tmp_path / "state"
    done = _lbaas(["network", "create-subnet", *args], {"state_dir": str(state)})
    assert _refused(done) == message
    assert done.stderr.strip() == message
    assert not state.exists()  # refused before anything was made


def _held(kind: int) -> socket.socket:
    held = socket.socket(socket.AF_INET, kind)
    held.bind(("127.0.0.1", 0))
    if kind == socket.SOCK_STREAM:
        held.listen()
    return held


@pytest.mark.parametrize("command", ["serve", "api"])
def test_a_taken_api_port_is_one_line_before_anything_starts(tmp_path: Path, command: str) -> None:
    with _held(socket.SOCK_STREAM) as held:
        port = held.getsockname()[1]
        done = _lbaas([command], {"state_dir": str(tmp_path), "api": {"port": port}, **NOOP})
    expected = f"lbaas: API address 127.0.0.1:{port} is in use by another process: change api.port or --port"
    assert _refused(done) == expected
    assert done.stderr.strip() == expected
    assert "API listening" not in done.stdout


def test_a_taken_agent_port_is_one_line(tmp_path: Path) -> None:
    with _held(socket.SOCK_STREAM) as held:
        port = held.getsockname()[1]
        settings = {"state_dir": str(tmp_path), "api": {"port": free_port()}}
        done = _lbaas(["serve"], {**settings, "agent": {"port": port}})
    assert _refused(done) == (
        f"lbaas: agent address 127.0.0.1:{port} is in use by another process: "
        "change agent.host/agent.port"
    )


def test_a_taken_heartbeat_port_is_one_line(tmp_path: Path) -> None:
    with _held(socket.SOCK_DGRAM) as held:
        port = held.getsockname()[1]
        settings = {
            "state_dir": str(tmp_path),
            "api": {"port": free_port()},
            "agent": {"port": free_port()},
            "health": {"bind_port": port},
        }
        done = _lbaas(["serve"], settings)
    assert _refused(done) == (
        f"lbaas: heartbeat address 127.0.0.1:{port} is in use by another process: "
        "change health.bind_host/bind_port"
    )
    assert "API listening" not in done.stdout


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("bogus://x", "lbaas: configuration error: database.url bogus://x cannot be used: "),
        (
            "postgresql+psycopg://u:sekret@127.0.0.1:1/x",
            "lbaas: configuration error: cannot use the database at "
            "postgresql+psycopg://u:***@127.0.0.1:1/x: ",
        ),
    ],
)
def test_an_unusable_database_url_is_one_line_without_its_password(
    tmp_path: Path, url: str, said: str
) -> None:
    done = _lbaas(["db", "upgrade", "--database-url", url], {"state_dir": str(tmp_path)})
    assert _refused(done).startswith(said), done.stderr
    assert "sekret" not in done.stderr + done.stdout
