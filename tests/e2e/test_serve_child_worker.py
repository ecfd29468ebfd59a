"""``lbaas serve`` runs its converge worker as a child process: restarted when it dies,
gone when serve goes (by SIGTERM or SIGKILL)."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lbaas.jobs.wakeup import wakeup_directory
from tests.e2e.conftest import Served, serve
from tests.support.waiting import wait_until

LB = "/v2/lbaas/loadbalancers"
SUBNET = "7f000a00-0000-4000-8000-000000000001"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, {"providers": {"enabled": ["noop"], "default": "noop"}})


def children(pid: int) -> list[int]:
    """Child pids of ``pid`` (each thread records the children it started)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return found


def worker_child(pid: int) -> int | None:
    for child in children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if b"worker" in cmdline:
            return child
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def create_and_wait_active(url: str) -> None:
    body = {"loadbalancer": {"name": "child", "vip_subnet_id": SUBNET}}
    lb = httpx.post(url + LB, json=body, timeout=10).json()["loadbalancer"]

    def active() -> bool:
        got = httpx.get(f"{url}{LB}/{lb['id']}", timeout=10).json()["loadbalancer"]
        return bool(got["provisioning_status"] == "ACTIVE")

    wait_until(active, 20, f"load balancer {lb['id']} to be ACTIVE")


def test_a_killed_worker_child_is_replaced_and_work_goes_on(served: Served) -> None:
    first = worker_child(served.pid)
    assert first is not None, "serve started no worker child"
    create_and_wait_active(served.url)
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: worker_child(served.pid) not in (None, first), 20, "a new worker child")
    create_and_wait_active(served.url)
    assert "exited with -9; restarting" in served.log.read_text()


def test_sigterm_on_serve_stops_its_worker_child(served: Served) -> None:
    child = worker_child(served.pid)
    assert child is not None
    os.kill(served.pid, signal.SIGTERM)
    # Exit status 0, not death by the signal: serve's cleanup ran to its end.
    assert served.process.wait(30) == 0, served.log.read_text()[-2000:]
    wait_until(lambda: not alive(child), 30, "the worker child to exit")
    assert "lbaas serve stopped" in served.log.read_text()
    assert not wakeup_directory(served.state_dir).exists()


def test_a_worker_child_outlives_a_killed_serve_only_briefly(served: Served) -> None:
    child = worker_child(served.pid)
    assert child is not None
    os.kill(served.pid, signal.SIGKILL)  # serve gets no chance to stop its child
    wait_until(lambda: not alive(child), 30, "the orphaned worker child to exit")
    # It stopped in order: its wakeup socket (and the then empty directory) is gone.
    assert not wakeup_directory(served.state_dir).exists()


@pytest.fixture
def slow_served(tmp_path: Path) -> Iterator[Served]:
    # Converges take 8 s (the kill must land inside one, even on a slow machine) and leases
    # last 120 s: a job held by a killed worker can only be finished within the test's
    # wait if serve frees the lease when its child dies.
    settings = {
        "providers": {"enabled": ["noop"], "default": "noop", "noop_delay": 8},
        "worker": {"lease_seconds": 120, "poll_interval": 0.1},
    }
    yield from serve(tmp_path, settings)


def test_a_job_held_by_a_killed_worker_child_runs_again_at_once(slow_served: Served) -> None:
    url = slow_served.url
    child = worker_child(slow_served.pid)
    assert child is not None
    body = {"loadbalancer": {"name": "slow", "vip_subnet_id": SUBNET}}
    lb = httpx.post(url + LB, json=body, timeout=10).json()["loadbalancer"]
    database = sqlite3.connect(slow_served.state_dir / "lbaas.sqlite")
    try:

        def held_by_child() -> bool:
            row = database.execute(
                "SELECT lease_owner FROM converge_jobs WHERE loadbalancer_id = ?", (lb["id"],)
            ).fetchone()
            return row is not None and f":{child}:" in (row[0] or "")

        wait_until(held_by_child, 10, "the worker child to claim the job")
        os.kill(child, signal.SIGKILL)  # in the middle of its 8 s converge
        got = httpx.get(f"{url}{LB}/{lb['id']}", timeout=10).json()["loadbalancer"]
        assert got["provisioning_status"] == "PENDING_CREATE"

        def active() -> bool:
            got = httpx.get(f"{url}{LB}/{lb['id']}", timeout=10).json()["loadbalancer"]
            return bool(got["provisioning_status"] == "ACTIVE")

        wait_until(active, 60, "the load balancer to be ACTIVE well before its lease ran out")
    finally:
        database.close()
    assert "released 1 converge job(s) held by dead worker process" in slow_served.log.read_text()


def _lease_owner(state_dir: Path, lb_id: str) -> str | None:
    database = sqlite3.connect(state_dir / "lbaas.sqlite")
    try:
        row = database.execute(
            "SELECT lease_owner FROM converge_jobs WHERE loadbalancer_id = ?", (lb_id,)
        ).fetchone()
    finally:
        database.close()
    return None if row is None else row[0]


def _start_slow_converge(served: Served) -> tuple[int, str]:
    """The worker child's pid, and a load balancer whose converge it is in the middle of."""
    child = worker_child(served.pid)
    assert child is not None
    body = {"loadbalancer": {"name": "slow", "vip_subnet_id": SUBNET}}
    lb_id = httpx.post(served.url + LB, json=body, timeout=10).json()["loadbalancer"]["id"]
    wait_until(
        lambda: f":{child}:" in (_lease_owner(served.state_dir, lb_id) or ""),
        20,
        "the worker child to claim the job",
    )
    return child, lb_id


@pytest.fixture
def stalling_served(tmp_path: Path) -> Iterator[Served]:
    # Converges last 60 s, leases 120 s; the worker gives its converges 1 s on SIGTERM.
    settings = {
        "providers": {"enabled": ["noop"], "default": "noop", "noop_delay": 60},
        "worker": {"lease_seconds": 120, "poll_interval": 0.1, "stop_timeout": 1},
    }
    yield from serve(tmp_path, settings)


def test_sigterm_frees_the_running_job_and_exits_zero(stalling_served: Served) -> None:
    child, lb_id = _start_slow_converge(stalling_served)
    os.kill(stalling_served.pid, signal.SIGTERM)
    assert stalling_served.process.wait(30) == 0, stalling_served.log.read_text()[-2000:]
    assert not alive(child)
    # The child freed the lease of its unfinished converge: no 120 s wait for anyone.
    assert _lease_owner(stalling_served.state_dir, lb_id) is None
    log = stalling_served.log.read_text()
    assert "freeing their leases" in log
    assert "killing it" not in log


def test_a_hung_worker_child_is_killed_after_the_timeout(stalling_served: Served) -> None:
    child, lb_id = _start_slow_converge(stalling_served)
    os.kill(child, signal.SIGSTOP)  # hung: it cannot even take its SIGTERM
    try:
        os.kill(stalling_served.pid, signal.SIGTERM)
        # worker.stop_timeout (1 s) + 5 s, then SIGKILL.
        assert stalling_served.process.wait(60) == 0, stalling_served.log.read_text()[-2000:]
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
    assert not alive(child)
    log = stalling_served.log.read_text()
    assert f"worker process {child} did not stop within 6 s; killing it" in log
    # Serve freed the killed child's lease itself.
    assert _lease_owner(stalling_served.state_dir, lb_id) is None
    assert f"held by dead worker process {child}" in log
