"""Failover of a SINGLE-topology load balancer, with real HAProxy processes to break.

(a) HAProxy killed with SIGKILL, master and workers: the agent's supervisor starts it again
    on the same amphora and traffic resumes.
(b) HAProxy hung with SIGSTOP: the agent cannot read its statistics, so heartbeats for it
    stop; the health manager's stale sweeper requests a failover and converge rebuilds the
    amphora (new id, old one gone) on the same VIP. A second load balancer on the same agent
    is a bystander: it must keep its amphora.
(c) A manual failover (``PUT .../failover``) also rebuilds the amphora.

Recovery times are printed as JSON lines (visible with ``-s``); nothing asserts on them.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.haproxy_processes import haproxy_tree, master_pid, signal_tree
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance, process_alive, running_serve
from tests.e2e.amphora.topology import HttpService, http_service, loadbalancer
from tests.e2e.amphora.traffic import answers, spread, wait_for_backends
from tests.support.waiting import wait_for_value, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

STALE_AFTER = 6.0  # seconds; room for a supervisor restart on a busy machine
RECOVERY_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def serve() -> Iterator[ServeInstance]:
    """A service of its own: these tests break amphorae on purpose."""
    settings = {"health": {"stale_after": STALE_AFTER, "heartbeat_interval": 0.5}}
    with running_serve(settings, prefix="lbf-") as instance:
        yield instance


def only_amphora(api: OctaviaApi, lb_id: str) -> dict[str, object]:
    amphorae = api.amphorae(lb_id)
    assert len(amphorae) == 1, amphorae
    return amphorae[0]


def amphora_gone(api: OctaviaApi, amphora_id: str) -> bool:
    """Whether the amphora is DELETED (or already purged from the API)."""
    response = api.http.get(f"/v2/octavia/amphorae/{amphora_id}")
    return response.status_code == 404 or response.json()["amphora"]["status"] == "DELETED"


def time_until_serving(service: HttpService, since: float) -> float:
    wait_until(lambda: answers(service.vip, service.port), RECOVERY_TIMEOUT, "traffic to resume")
    return time.monotonic() - since


def replaced_amphora(api: OctaviaApi, lb_id: str, old_id: str) -> str:
    """Wait for the load balancer to run on an amphora other than ``old_id``; its id."""

    def new_id() -> str | None:
        live = [a for a in api.amphorae(lb_id) if a["status"] != "DELETED"]
        ids = {str(a["id"]) for a in live}
        return next(iter(ids)) if len(ids) == 1 and old_id not in ids else None

    found = wait_for_value(new_id, RECOVERY_TIMEOUT, "a new amphora")
    api.wait_active(lb_id, RECOVERY_TIMEOUT)
    return found


def test_killed_haproxy_is_restarted_by_the_agent(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "kill-9") as lb:
        service = http_service(lb, [one, two])
        wait_for_backends(service.vip, service.port, {"one", "two"})
        amphora_id = str(only_amphora(api, lb.id)["id"])
        amphora_dir = serve.state_dir / "amphorae" / amphora_id
        killed = signal_tree(amphora_dir, signal.SIGKILL)
        killed_at = time.monotonic()
        assert len(killed) >= 2, f"expected a master and a worker, got {killed}"
        wait_until(lambda: not any(process_alive(p) for p in killed), 10, "HAProxy to die")
        recovered = time_until_serving(service, killed_at)
        new_master = master_pid(amphora_dir)
        assert new_master is not None and new_master not in killed
        assert spread(service.vip, service.port, 20).total() == 20
        same_amphora = str(only_amphora(api, lb.id)["id"]) == amphora_id
        print(
            json.dumps(
                {
                    "measure": "failover_kill9_supervisor_restart",
                    "recovery_s": round(recovered, 3),
                    "same_amphora": same_amphora,
                }
            )
        )
        assert same_amphora, "the supervisor should restart HAProxy in place, not fail over"


def test_hung_amphora_is_failed_over_by_the_health_manager(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "hung") as lb, loadbalancer(api, "bystander") as other:
        service = http_service(lb, [one, two])
        bystander = http_service(other, [one])
        wait_for_backends(service.vip, service.port, {"one", "two"})
        assert answers(bystander.vip, bystander.port)
        old_id = str(only_amphora(api, lb.id)["id"])
        bystander_amphora = str(only_amphora(api, other.id)["id"])
        old_dir = serve.state_dir / "amphorae" / old_id
        stopped = signal_tree(old_dir, signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            new_id = replaced_amphora(api, lb.id, old_id)
            rebuilt = time.monotonic() - stopped_at
            recovered = time_until_serving(service, stopped_at)
        finally:
            resume(stopped)
        assert new_id != old_id
        wait_until(lambda: amphora_gone(api, old_id), 30, f"amphora {old_id} to be DELETED")
        assert api.loadbalancer(lb.id)["vip_address"] == service.vip
        assert not any(process_alive(p) for p in stopped), "the hung HAProxy was left behind"
        wait_for_backends(service.vip, service.port, {"one", "two"})
        print(
            json.dumps(
                {
                    "measure": "failover_hung_amphora",
                    "stale_after_s": STALE_AFTER,
                    "new_amphora_s": round(rebuilt, 3),
                    "traffic_resumed_s": round(recovered, 3),
                    "storm_alarm_raised": "failover storm" in serve.log_tail(200_000),
                }
            )
        )
        assert str(only_amphora(api, other.id)["id"]) == bystander_amphora
        assert answers(bystander.vip, bystander.port)


def resume(pids: list[int]) -> None:
    """Let stopped processes run again (so they can act on a SIGTERM already sent)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            continue


def test_manual_failover_rebuilds_the_amphora(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two = backends.http("one", "two")
    with loadbalancer(api, "manual") as lb:
        service = http_service(lb, [one, two])
        wait_for_backends(service.vip, service.port, {"one", "two"})
        old_id = str(only_amphora(api, lb.id)["id"])
        old_pids = haproxy_tree(serve.state_dir / "amphorae" / old_id)
        requested_at = time.monotonic()
        api.failover(lb.id)
        new_id = replaced_amphora(api, lb.id, old_id)
        recovered = time_until_serving(service, requested_at)
        assert amphora_gone(api, old_id)
        assert not any(process_alive(p) for p in old_pids)
        wait_for_backends(service.vip, service.port, {"one", "two"})
        assert new_id != old_id
        print(json.dumps({"measure": "failover_manual", "traffic_resumed_s": round(recovered, 3)}))


def test_a_hung_amphora_does_not_silence_its_neighbours(
    serve: ServeInstance, api: OctaviaApi, backends: BackendFleet
) -> None:
    (one,) = backends.http("one")
    with loadbalancer(api, "hung-again") as lb, loadbalancer(api, "neighbour") as other:
        http_service(lb, [one])
        neighbour = http_service(other, [one])
        assert answers(neighbour.vip, neighbour.port)
        log_before = len(serve.log_tail(10_000_000))
        amphora_id = str(only_amphora(api, lb.id)["id"])
        stopped = signal_tree(serve.state_dir / "amphorae" / amphora_id, signal.SIGSTOP)
        try:
            # Watch one stale period and a bit: long enough for the hung one to be noticed.
            time.sleep(STALE_AFTER + 2.0)
            logged = serve.log_tail(10_000_000)[log_before:]
        finally:
            resume(stopped)
        assert "failover storm" not in logged, [
            line for line in logged.splitlines() if "failover storm" in line
        ]
