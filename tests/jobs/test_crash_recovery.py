"""Workers killed with SIGKILL lose nothing: leases run out and jobs are claimed again.

The API runs in-process (its own worker never started), so every write commits its job
and nothing claims it until a real ``lbaas worker`` process does.
"""

from __future__ import annotations

import os
import signal
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.processes import lbaas_env, lbaas_process, read_records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


def _worker_env(
    state_dir: Path,
    records: Path,
    delay: float,
    database_url: str = "",
    worker: dict[str, float] | None = None,
) -> dict[str, str]:
    return lbaas_env(
        {
            "state_dir": str(state_dir),
            "database": {"url": database_url},
            "providers": {
                "enabled": ["noop"],
                "default": "noop",
                "noop_delay": delay,
                "noop_record_path": str(records),
            },
            "worker": {"lease_seconds": 1.5, "poll_interval": 0.1, "threads": 4, **(worker or {})},
            "log_level": "WARNING",
        }
    )


def _post_lbs(api: Api, count: int) -> list[str]:
    ids = []
    for n in range(count):
        body = {"name": f"crash{n}", "vip_subnet_id": LOOPBACK_SUBNET}
        r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": body})
        assert r.status_code == 201, r.text
        ids.append(r.json()["loadbalancer"]["id"])
    return ids


def _statuses(api: Api) -> dict[str, str]:
    lbs = api.get("/v2/lbaas/loadbalancers").json()["loadbalancers"]
    return {lb["id"]: lb["provisioning_status"] for lb in lbs}


def test_kill_during_slow_converge_then_restart(
    idle_api: Api, state_dir: Path, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    ids = _post_lbs(idle_api, 6)
    slow = _worker_env(state_dir, records, delay=30.0)
    with lbaas_process(["worker"], slow, tmp_path / "w1.log") as first:
        wait_until(lambda: len(read_records(records)) >= 4, 30, "converges to start")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    assert all(r["phase"] == "start" for r in read_records(records))
    assert set(_statuses(idle_api).values()) == {"PENDING_CREATE"}
    fast = _worker_env(state_dir, records, delay=0.0)
    with lbaas_process(["worker"], fast, tmp_path / "w2.log"):
        wait_until(lambda: set(_statuses(idle_api).values()) == {"ACTIVE"}, 60, "all ACTIVE")
    finished = {r["loadbalancer_id"] for r in read_records(records) if r["phase"] == "end"}
    assert finished == set(ids)


def test_a_restarted_worker_frees_its_own_claims_at_once(
    idle_api: Api, state_dir: Path, tmp_path: Path
) -> None:
    """A worker SIGKILLed mid-converge and started again takes its jobs back at once:
    leases of 120 s would otherwise hold them PENDING for two minutes."""
    records = tmp_path / "records.jsonl"
    ids = _post_lbs(idle_api, 4)
    long_lease = {"lease_seconds": 120.0}
    slow = _worker_env(state_dir, records, delay=60.0, worker=long_lease)
    with lbaas_process(["worker"], slow, tmp_path / "w1.log") as first:
        wait_until(lambda: len(read_records(records)) >= 4, 30, "converges to start")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    fast = _worker_env(state_dir, records, delay=0.0, worker=long_lease)
    log = tmp_path / "w2.log"
    with lbaas_process(["worker"], fast, log):
        wait_until(lambda: set(_statuses(idle_api).values()) == {"ACTIVE"}, 60, "all ACTIVE")
    assert "released 4 converge job(s) held by this worker slot's dead predecessor" in (
        log.read_text()
    )
    finished = {r["loadbalancer_id"] for r in read_records(records) if r["phase"] == "end"}
    assert finished == set(ids)


def test_a_second_live_worker_leaves_the_first_ones_claims_alone(
    idle_api: Api, state_dir: Path, tmp_path: Path
) -> None:
    """Slots are per live process: a worker started beside a running one takes another
    slot and frees nothing of the running one's."""
    records = tmp_path / "records.jsonl"
    _post_lbs(idle_api, 2)
    slow = _worker_env(state_dir, records, delay=60.0, worker={"lease_seconds": 120.0})
    with lbaas_process(["worker"], slow, tmp_path / "w1.log"):
        wait_until(lambda: len(read_records(records)) >= 2, 30, "converges to start")
        second_log = tmp_path / "w2.log"
        with lbaas_process(["worker"], slow, second_log):
            wait_until(lambda: "running" in second_log.read_text(), 30, "the second worker")
        assert "released" not in second_log.read_text()
        # Both converges still belong to the first worker alone.
        assert len(read_records(records)) == 2
    assert set(_statuses(idle_api).values()) == {"PENDING_CREATE"}


def test_sigterm_on_a_worker_frees_its_unfinished_jobs(
    idle_api: Api, state_dir: Path, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    _post_lbs(idle_api, 2)
    slow = _worker_env(
        state_dir, records, delay=60.0, worker={"lease_seconds": 120.0, "stop_timeout": 0.5}
    )
    log = tmp_path / "w1.log"
    with lbaas_process(["worker"], slow, log) as first:
        wait_until(lambda: len(read_records(records)) >= 2, 30, "converges to start")
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
    assert "stopping with 2 converge(s) unfinished; freeing their leases" in log.read_text()
    # Freed, so a worker with no slot history (another state directory) takes them at once.
    database_url = f"sqlite:///{state_dir / 'lbaas.sqlite'}"
    fast = _worker_env(tmp_path / "other-state", records, delay=0.0, database_url=database_url)
    with lbaas_process(["worker"], fast, tmp_path / "w2.log"):
        wait_until(lambda: set(_statuses(idle_api).values()) == {"ACTIVE"}, 60, "all ACTIVE")


def test_a_stopping_worker_keeps_renewing_while_its_converges_finish(
    idle_api: Api, state_dir: Path, tmp_path: Path
) -> None:
    """SIGTERM lets a running converge finish (``stop_timeout`` 30 s): its lease (3 s,
    against a 5-s converge) must be renewed meanwhile, or a second worker takes the job
    and converges the same load balancer at the same time. (With the 1.5-s lease of the
    other tests, one renewal late by a second on a loaded machine lost the lease.)"""
    records = tmp_path / "records.jsonl"
    database_url = f"sqlite:///{state_dir / 'lbaas.sqlite'}"
    worker = {"stop_timeout": 30.0, "lease_seconds": 3.0}
    env_a = _worker_env(state_dir, records, 5.0, database_url, worker)
    env_b = _worker_env(tmp_path / "b-state", records, 5.0, database_url, worker)
    with (
        lbaas_process(["worker"], env_a, tmp_path / "a.log") as a,
        lbaas_process(["worker"], env_b, tmp_path / "b.log") as b,
    ):
        _post_lbs(idle_api, 1)
        wait_until(lambda: len(read_records(records)) >= 1, 30, "a converge to start")
        holder = a if read_records(records)[0]["pid"] == a.pid else b
        holder.send_signal(signal.SIGTERM)
        assert holder.wait(60) == 0
        wait_until(lambda: set(_statuses(idle_api).values()) == {"ACTIVE"}, 30, "ACTIVE")
    assert _overlaps(read_records(records)) == []
    # The stopping worker finished the converge itself: nothing was freed or taken over.
    ends = [r for r in read_records(records) if r["phase"] == "end"]
    assert [r["pid"] for r in ends] == [holder.pid]


def test_jobs_committed_with_no_worker_are_claimed_later(
    idle_api: Api, state_dir: Path, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    ids = _post_lbs(idle_api, 5)
    # Between commit and claim: the jobs are durable rows, no worker has seen them.
    assert read_records(records) == []
    with lbaas_process(["worker"], _worker_env(state_dir, records, 0.0), tmp_path / "w.log"):
        wait_until(lambda: set(_statuses(idle_api).values()) == {"ACTIVE"}, 60, "all ACTIVE")
    assert {r["loadbalancer_id"] for r in read_records(records) if r["phase"] == "end"} == set(ids)


def _overlaps(records: list[dict[str, Any]]) -> list[str]:
    """Load balancers whose converges overlapped in time (must never happen)."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        if r["phase"] == "end":
            spans[r["loadbalancer_id"]].append((r["started"], r["finished"]))
    bad = []
    for lb_id, intervals in spans.items():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
            if start < end:
                bad.append(lb_id)
    return bad


@pytest.mark.postgres
def test_two_workers_on_postgres_never_run_a_job_twice_at_once(
    postgres: Any, state_dir: Path, tmp_path: Path
) -> None:
    from starlette.testclient import TestClient

    from tests.support.control_plane import asgi_app, build_plane, make_settings

    url = postgres.create("two_workers")
    plane = build_plane(make_settings(state_dir, url))
    records = tmp_path / "records.jsonl"
    try:
        with TestClient(asgi_app(plane)) as client:
            api = Api(client, "p-alpha", "member")
            env = _worker_env(state_dir, records, delay=0.01, database_url=url)
            logs = [tmp_path / "a.log", tmp_path / "b.log"]
            with (
                lbaas_process(["worker"], env, logs[0]),
                lbaas_process(["worker"], env, logs[1]),
            ):
                # Both must be claiming before the jobs exist, or the first one up could
                # drain the queue alone on a slow machine.
                wait_until(lambda: all("running" in log.read_text() for log in logs), 60, "workers")
                ids = _post_lbs(api, 200)
                wait_until(
                    lambda: list(_statuses(api).values()).count("ACTIVE") == 200, 120, "200 ACTIVE"
                )
            # A resync may legitimately re-apply; what must never happen is overlap.
            done = [r for r in read_records(records) if r["phase"] == "end"]
            assert {r["loadbalancer_id"] for r in done} == set(ids)
            assert _overlaps(read_records(records)) == []
            assert len({r["pid"] for r in done}) == 2, "both workers took jobs"
    finally:
        plane.stop()
