"""Each branch of the job runner's state machine, on a real SQLite database."""

from __future__ import annotations

import time
from typing import Any

from lbaas.config import WorkerSettings
from lbaas.db.jobs import job_queue
from lbaas.jobs.runner import backoff_delay
from tests.support.api_client import LOOPBACK_SUBNET, Api
from tests.support.control_plane import noop_of


def _post_lb(api: Api) -> str:
    r = api.post("/v2/lbaas/loadbalancers", {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}})
    assert r.status_code == 201
    return str(r.json()["loadbalancer"]["id"])


def _status(api: Api, lb_id: str) -> str:
    return str(
        api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()["loadbalancer"]["provisioning_status"]
    )


def _converge_status(api: Api, lb_id: str) -> dict[str, Any]:
    return dict(
        api.get(f"/v2/lbaas/loadbalancers/{lb_id}/converge_status").json()["converge_status"]
    )


def test_success_settles_active(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    assert idle_plane.worker.run_once()
    assert _status(idle_api, lb) == "ACTIVE"
    assert not idle_plane.worker.run_once()  # nothing left
    assert _converge_status(idle_api, lb) == {
        "loadbalancer_id": lb,
        "provisioning_status": "ACTIVE",
        "pending": False,
        "last_error": None,
    }


def test_temporary_error_retries_then_succeeds(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    noop_of(idle_plane).fail = "temporary"
    assert idle_plane.worker.run_once()
    assert _status(idle_api, lb) == "PENDING_CREATE"
    assert "temporary" in str(_converge_status(idle_api, lb)["last_error"])
    noop_of(idle_plane).fail = "none"
    time.sleep(0.06)  # the provider asked for a 0.05 s delay
    assert idle_plane.worker.run_once()
    assert _status(idle_api, lb) == "ACTIVE"
    assert _converge_status(idle_api, lb)["last_error"] is None


def test_temporary_errors_exhaust_attempts_into_error(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    noop_of(idle_plane).fail = "temporary"
    runs = 0
    deadline = time.monotonic() + 5
    while _status(idle_api, lb) != "ERROR" and time.monotonic() < deadline:
        runs += idle_plane.worker.run_once()
        time.sleep(0.01)
    assert _status(idle_api, lb) == "ERROR"
    assert runs == 3  # max_attempts
    status = _converge_status(idle_api, lb)
    assert "gave up after 3 attempts" in status["last_error"]
    assert status["pending"] is False


def test_permanent_error_sets_error_at_once(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    noop_of(idle_plane).fail = "permanent"
    assert idle_plane.worker.run_once()
    assert _status(idle_api, lb) == "ERROR"
    assert "permanent" in _converge_status(idle_api, lb)["last_error"]
    # An ERROR load balancer can be failed over; success brings it back to ACTIVE.
    noop_of(idle_plane).fail = "none"
    admin = idle_api.as_("p-admin", "admin")
    assert admin.put(f"/v2/lbaas/loadbalancers/{lb}/failover").status_code == 202
    assert idle_plane.worker.run_once()
    assert _status(idle_api, lb) == "ACTIVE"


def test_unexpected_exception_counts_as_temporary(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    noop_of(idle_plane).fail = "unexpected"
    assert idle_plane.worker.run_once()
    assert _status(idle_api, lb) == "PENDING_CREATE"
    assert _converge_status(idle_api, lb)["last_error"] == "internal error: RuntimeError"


def test_lost_lease_writes_nothing(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    db = idle_plane.database
    first = job_queue.claim_next(db, "worker-a", time.time(), lease_seconds=0.01)
    assert first is not None
    time.sleep(0.02)
    second = job_queue.claim_next(db, "worker-b", time.time(), lease_seconds=30)
    assert second is not None and second.loadbalancer_id == lb
    with db.write() as session:
        assert job_queue.check_fence(session, first) is job_queue.Fence.LOST
        job_queue.settle_done(session, first, time.time())
    with db.write() as session:
        assert job_queue.check_fence(session, second) is job_queue.Fence.CURRENT


def test_changes_queued_together_merge_into_one_converge(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    with idle_plane.database.write() as session:
        for _ in range(4):  # four more changes while the first is still queued
            job_queue.enqueue_converge(session, lb, time.time())
    while idle_plane.worker.run_once():
        pass
    applies = [c for c in noop_of(idle_plane).calls if c.loadbalancer_id == lb]
    assert len(applies) == 1
    assert _status(idle_api, lb) == "ACTIVE"


def test_change_during_a_run_is_converged_again(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    db = idle_plane.database
    claim = job_queue.claim_next(db, "worker-a", time.time(), lease_seconds=30)
    assert claim is not None
    with db.write() as session:
        job_queue.enqueue_converge(session, lb, time.time())
    with db.write() as session:
        assert job_queue.check_fence(session, claim) is job_queue.Fence.SUPERSEDED
        job_queue.settle_done(session, claim, time.time())
    assert idle_plane.worker.run_once()  # the newer generation runs
    assert _status(idle_api, lb) == "ACTIVE"


def test_resync_requeues_active_load_balancers(idle_plane: Any, idle_api: Api) -> None:
    lb = _post_lb(idle_api)
    assert idle_plane.worker.run_once()
    assert job_queue.enqueue_resync(idle_plane.database, time.time()) == 1
    assert idle_plane.worker.run_once()
    assert len([c for c in noop_of(idle_plane).calls if c.loadbalancer_id == lb]) == 2
    assert _status(idle_api, lb) == "ACTIVE"


def test_resync_takes_only_due_load_balancers_oldest_first(idle_plane: Any, idle_api: Api) -> None:
    lbs = [_post_lb(idle_api) for _ in range(3)]
    while idle_plane.worker.run_once():
        pass
    db = idle_plane.database
    now = time.time()
    # Settled just now: not due within an interval of a minute.
    assert job_queue.enqueue_resync(db, now, interval=60.0) == 0
    # Due a minute later, but one tick takes at most its share, the oldest first.
    assert job_queue.enqueue_resync(db, now + 61.0, interval=60.0, limit=2) == 2
    with db.read() as session:
        pending = {
            lb for lb in lbs if (job := job_queue.last_error(session, lb)) and job[1] > job[2]
        }
    assert pending == set(lbs[:2])
    assert job_queue.count_active(db) == 3


def test_a_resync_tick_leaves_room_for_what_is_already_due(idle_plane: Any, idle_api: Api) -> None:
    """Creates waiting for the worker take a tick's share first (bench/scale.py: the
    resync used to queue more than the worker converged, creates waited behind it)."""
    settled = [_post_lb(idle_api) for _ in range(3)]
    while idle_plane.worker.run_once():
        pass
    waiting = [_post_lb(idle_api) for _ in range(2)]  # queued, not converged yet
    db = idle_plane.database
    later = time.time() + 61.0
    assert job_queue.count_due(db, later) == 2
    assert job_queue.enqueue_resync_share(db, later, 60.0, share=2) == 0
    assert job_queue.enqueue_resync_share(db, later, 60.0, share=3) == 1
    assert job_queue.count_due(db, later) == 3
    while idle_plane.worker.run_once():  # the creates; the resync's is due only later
        pass
    assert {c.loadbalancer_id for c in noop_of(idle_plane).calls} == set(settled + waiting)
    assert job_queue.count_due(db, later) == 1
    assert job_queue.enqueue_resync_share(db, later, 60.0, share=3) == 2


def test_one_load_balancer_is_queued_again_only_when_settled(
    idle_plane: Any, idle_api: Api
) -> None:
    """What the distributed status poll asks when a port binding moved under a node."""
    lb, other = _post_lb(idle_api), _post_lb(idle_api)
    db = idle_plane.database
    # Still PENDING_CREATE with its first converge outstanding: nothing more is asked.
    assert not job_queue.enqueue_if_settled(db, lb, time.time())
    while idle_plane.worker.run_once():
        pass
    assert job_queue.enqueue_if_settled(db, lb, time.time())
    # Queued now: asking again adds nothing, and the other load balancer is untouched.
    assert not job_queue.enqueue_if_settled(db, lb, time.time())
    with db.read() as session:
        pending = {
            lb_id
            for lb_id in (lb, other)
            if (job := job_queue.last_error(session, lb_id)) and job[1] > job[2]
        }
    assert pending == {lb}
    assert idle_plane.worker.run_once()
    assert len([c for c in noop_of(idle_plane).calls if c.loadbalancer_id == lb]) == 2
    assert not job_queue.enqueue_if_settled(db, "no-such-load-balancer", time.time())


def test_default_retries_outlast_an_agent_restart() -> None:
    """The chaos campaign saw acknowledged deletes end in ERROR: an agent killed and
    restarted a few times in a row was unreachable for ~18 s, longer than the 7.5 s the
    old defaults (5 attempts, backoff doubling from 0.5 s) retried for. The defaults
    now keep a load balancer PENDING through a minute of agent outage, and retry at
    most 5 s apart so it converges soon after the agent is back."""
    worker = WorkerSettings()
    delays = [
        backoff_delay(n, worker.backoff_base, worker.backoff_max)
        for n in range(worker.max_attempts - 1)
    ]
    assert sum(delays) >= 60
    assert max(delays) <= 5
