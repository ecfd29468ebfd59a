"""``lbaas serve`` with the amphora provider as a real process, on ports nobody else uses.

Each instance gets free ports for the API, the agent and the heartbeat receiver, its own
short state directory (HAProxy's unix sockets live under it and their paths are limited to
107 bytes, so pytest's long temporary paths do not fit) and its own VIP subnet inside
127.0.0.0/8, so that two test runs on one machine never bind the same VIP and port.

Stopping it is careful because HAProxy outlives its agent: the agent starts every HAProxy in
a session of its own, so killing ``lbaas serve`` leaves them running. ``stop`` therefore
deletes every load balancer through the API and waits for them to go, then stops the
process, and finally kills any HAProxy whose command line names a file under this state
directory (processes this test started, found by their pid files and by ``/proc``).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from lbaas.state_cleanup import KEEPER, processes_of
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.support.processes import lbaas_env
from tests.support.waiting import wait_until

START_TIMEOUT = 60.0
DELETE_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0


def free_port(host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    """A port nothing listens on at ``host`` right now (TCP, or UDP with SOCK_DGRAM)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def random_vip_subnet() -> str:
    """A /24 in 127.0.0.0/8 away from 127.0.0.x and the default 127.0.10.0/24."""
    return f"127.{random.randint(20, 250)}.{random.randint(0, 255)}.0/24"


@dataclass
class ServeInstance:
    """A running ``lbaas serve``: where it answers and where it keeps its files."""

    url: str
    state_dir: Path
    log: Path
    api_port: int
    agent_port: int
    health_port: int
    vip_subnet: str
    process: subprocess.Popen[bytes]
    settings: dict[str, Any] = field(default_factory=dict)

    def api(self) -> OctaviaApi:
        return OctaviaApi(self.url)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def amphora_dirs(self) -> list[Path]:
        root = self.state_dir / "amphorae"
        return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def diagnose(serve: ServeInstance, lb_id: str) -> subprocess.CompletedProcess[str]:
    """``lbaas diagnose <lb_id>`` run against ``serve``'s settings."""
    return subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "diagnose", lb_id],
        env=lbaas_env(serve.settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _short_state_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def long_directory(parent: Path, length: int) -> Path:
    """A new directory under ``parent`` whose absolute path is ``length`` bytes long."""
    path = parent.absolute() / ("d" * (length - len(str(parent.absolute())) - 1))
    path.mkdir()
    assert len(str(path)) == length
    return path


def _merged(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def serve_settings(state_dir: Path, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Settings of one test instance: free ports, fast heartbeats and polling, own subnet."""
    api_port = free_port()
    agent_port = free_port()
    while agent_port == api_port:
        agent_port = free_port()
    base: dict[str, Any] = {
        "state_dir": str(state_dir),
        "api": {"port": api_port},
        # No socket keeper unless a test asks for one (``test_access_log_keeper.py``):
        # a test's SIGKILLed serve would leave one holding sockets until clean-up.
        "agent": {"port": agent_port, "vip_probe_interval": 1.0, "log_socket_keeper": False},
        "health": {
            "bind_port": free_port(kind=socket.SOCK_DGRAM),
            "heartbeat_interval": 0.5,
            "stale_after": 3.0,
        },
        "worker": {"poll_interval": 0.05, "backoff_base": 0.1, "backoff_max": 2.0},
        "network": {"loopback_subnet_cidr": random_vip_subnet()},
    }
    return _merged(base, extra or {})


@contextmanager
def running_serve(
    extra_settings: Mapping[str, Any] | None = None,
    *,
    prefix: str = "lbe-",
    state_dir_length: int | None = None,
) -> Iterator[ServeInstance]:
    """Start ``lbaas serve`` (amphora provider by default); clean everything up after.
    ``state_dir_length``: a state directory of that many bytes (``long_directory``)."""
    if shutil.which("haproxy") is None:
        raise AssertionError("haproxy is not installed: the amphora e2e tests need it")
    scratch = _short_state_dir(prefix)
    state_dir = scratch if state_dir_length is None else long_directory(scratch, state_dir_length)
    settings = serve_settings(state_dir, extra_settings)
    log = state_dir / "serve.log"
    instance = _spawn(settings, state_dir, log)
    try:
        wait_until(lambda: _answers(instance), START_TIMEOUT, "lbaas serve to answer")
        yield instance
    finally:
        try:
            stop_serve(instance)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _spawn(settings: dict[str, Any], state_dir: Path, log: Path) -> ServeInstance:
    env = lbaas_env(settings)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lbaas.cli", "serve"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    api_port = int(settings["api"]["port"])
    return ServeInstance(
        url=f"http://127.0.0.1:{api_port}",
        state_dir=state_dir,
        log=log,
        api_port=api_port,
        agent_port=int(settings["agent"]["port"]),
        health_port=int(settings["health"]["bind_port"]),
        vip_subnet=str(settings["network"]["loopback_subnet_cidr"]),
        process=process,
        settings=settings,
    )


@contextmanager
def kill_and_restart(instance: ServeInstance) -> Iterator[None]:
    """SIGKILL ``lbaas serve`` (its HAProxies serve on), yield, then start it again.

    The new process takes the same settings and state directory, so its agent adopts the
    running HAProxies; ``instance.process`` becomes the new one (stopped at clean-up).
    """
    os.killpg(instance.process.pid, signal.SIGKILL)
    instance.process.wait(STOP_TIMEOUT)
    yield
    instance.process = _spawn(instance.settings, instance.state_dir, instance.log).process
    wait_until(lambda: _answers(instance), START_TIMEOUT, "lbaas serve to answer again")


def _answers(instance: ServeInstance) -> bool:
    if instance.process.poll() is not None:
        raise AssertionError(f"lbaas serve exited early:\n{instance.log_tail()}")
    try:
        return httpx.get(instance.url + "/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def stop_serve(instance: ServeInstance) -> None:
    """Delete every load balancer, stop the process, then kill any HAProxy left behind."""
    try:
        if instance.process.poll() is None:
            with instance.api() as api:
                api.delete_all_loadbalancers(DELETE_TIMEOUT)
    except (AssertionError, httpx.HTTPError) as exc:
        print(f"cleanup: could not delete every load balancer: {exc}", file=sys.stderr)
    finally:
        _stop_process(instance.process)
        kill_haproxies_under(instance.state_dir)
        kill_keepers_of(instance.state_dir)


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(STOP_TIMEOUT)


def haproxy_pids_under(state_dir: Path) -> list[int]:
    """HAProxy processes (masters and workers) whose command line names a file in state_dir."""
    needle = str(state_dir.absolute())
    found = set()
    for pid_file in state_dir.glob("amphorae/*/haproxy.pid"):
        try:
            found.add(int(pid_file.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv and Path(argv[0]).name == "haproxy" and any(needle in arg for arg in argv):
            found.add(int(entry.name))
    return sorted(pid for pid in found if _is_haproxy_of(pid, needle))


def _is_haproxy_of(pid: int, needle: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return bool(argv) and Path(argv[0]).name == "haproxy" and any(needle in a for a in argv)


def kill_haproxies_under(state_dir: Path) -> list[int]:
    """SIGKILL every HAProxy of this state directory (stopped ones included); their pids."""
    victims = haproxy_pids_under(state_dir)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(process_alive(p) for p in victims):
        time.sleep(0.05)
    return victims


def keeper_pids_of(state_dir: Path) -> list[int]:
    """The access-log socket keepers of this state directory (as ``lbaas cleanup`` finds them)."""
    return [p.pid for p in processes_of(state_dir) if p.name == KEEPER]


def kill_keepers_of(state_dir: Path) -> None:
    for pid in keeper_pids_of(state_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
