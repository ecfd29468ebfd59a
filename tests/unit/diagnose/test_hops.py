"""Verdicts on what the agent and the converge job say, for states the other tests cannot
hold still long enough (a HAProxy the agent restarts within a second, a job leased now)."""

from __future__ import annotations

from lbaas.db.jobs.job_queue import JobFacts
from lbaas.diagnose.agent_hops import haproxy_hop
from lbaas.diagnose.hops import converge_hop
from lbaas.diagnose.verdict import Level
from lbaas.wire.amphora import AmphoraStatus

NOW = 1_000.0


def test_a_stopped_haproxy_fails_with_the_agents_last_error() -> None:
    stopped = AmphoraStatus(
        amphora_id="a", applied_version=7, running=False, restarts=3, last_error="exit 1"
    )
    verdict = haproxy_hop(stopped)
    assert verdict.level is Level.FAIL
    assert "not running" in verdict.detail and "exit 1" in verdict.detail
    assert "applied version 7" in verdict.detail and "3 restart(s)" in verdict.detail
    running = AmphoraStatus(amphora_id="a", applied_version=7, running=True, master_pid=42)
    assert haproxy_hop(running).level is Level.OK


def job(**fields: object) -> JobFacts:
    base: dict[str, object] = {
        "requested_gen": 3,
        "done_gen": 2,
        "attempts": 0,
        "lease_owner": None,
        "lease_expires_at": None,
        "next_attempt_at": NOW - 4,
        "last_error": None,
    }
    return JobFacts(**{**base, **fields})  # type: ignore[arg-type]


def test_converge_states() -> None:
    assert converge_hop(None, False, NOW).level is Level.WARN
    assert converge_hop(job(done_gen=3), False, NOW).level is Level.OK
    failed = converge_hop(job(done_gen=3, last_error="boom"), True, NOW)
    assert failed.level is Level.FAIL and "boom" in failed.detail
    running = converge_hop(job(lease_owner="w1", lease_expires_at=NOW + 5), False, NOW)
    assert running.level is Level.WARN and "converging now (w1)" in running.detail
    backing = converge_hop(job(attempts=2, next_attempt_at=NOW + 3, last_error="x"), False, NOW)
    assert backing.level is Level.FAIL and "retry in 3.0s" in backing.detail
    waiting = converge_hop(job(), False, NOW)
    assert waiting.level is Level.WARN and "waiting 4.0s for a worker" in waiting.detail
