"""The resync checks versions before it converges (``lbaas.jobs.resync_check``): a load
balancer whose data plane holds what its last converge sent is marked checked, not
converged; anything else is converged as before."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select

from lbaas.converge.converge import Converger
from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue, resync_versions
from lbaas.db.tables import ConvergeJobRow
from lbaas.health.rollup import roll_up
from lbaas.jobs.resync_check import CheckResult, ResyncPacing, check_due
from lbaas.jobs.runner import JobRunner
from lbaas.jobs.worker import Worker
from lbaas.model.graph import LoadBalancer
from lbaas.providers.base import ApplyResult, ProviderContext
from lbaas.providers.noop import NoopProvider
from lbaas.providers.registry import ProviderRegistry
from tests.jobs.test_runner import _post_lb
from tests.support.api_client import Api

INTERVAL = 60.0


def _settled(plane: Any, api: Api, count: int) -> list[str]:
    lbs = [_post_lb(api) for _ in range(count)]
    while plane.worker.run_once():
        pass
    return lbs


def _record(db: Database, versions: Mapping[str, int | None]) -> None:
    with db.write() as session:
        for lb_id, version in versions.items():
            resync_versions.record_applied_version(session, lb_id, version)


def _queued(db: Database, lbs: list[str]) -> set[str]:
    with db.read() as session:
        return {lb for lb in lbs if (job := job_queue.last_error(session, lb)) and job[1] > job[2]}


def test_what_the_data_plane_holds_is_checked_and_the_rest_converged(
    idle_plane: Any, idle_api: Api
) -> None:
    held, moved, unversioned = _settled(idle_plane, idle_api, 3)
    db = idle_plane.database
    _record(db, {held: 101, moved: 102})
    asked: list[tuple[str, dict[str, int]]] = []

    def check(provider: str, wanted: Mapping[str, int]) -> set[str]:
        asked.append((provider, dict(wanted)))
        return {held, "an-id-it-was-not-asked-about"}

    later = time.time() + INTERVAL + 1
    assert check_due(db, check, later, INTERVAL) == CheckResult(held=1, undecided=0)
    # One call for every due load balancer with a version, whatever their number.
    assert asked == [("noop", {held: 101, moved: 102})]
    # The checked one is not due again for an interval; the others are converged.
    assert job_queue.enqueue_resync(db, later, INTERVAL) == 2
    assert _queued(db, [held, moved, unversioned]) == {moved, unversioned}


def test_a_version_written_since_the_check_is_not_marked(idle_plane: Any, idle_api: Api) -> None:
    (lb,) = _settled(idle_plane, idle_api, 1)
    db = idle_plane.database
    _record(db, {lb: 7})
    later = time.time() + INTERVAL + 1
    resync_versions.mark_checked(db, {lb: 6}, later)  # a converge settled version 7 since
    assert job_queue.enqueue_resync(db, later, INTERVAL) == 1


def test_a_provider_that_cannot_check_leaves_all_to_the_converges(
    idle_plane: Any, idle_api: Api
) -> None:
    lbs = _settled(idle_plane, idle_api, 2)
    db = idle_plane.database
    _record(db, dict.fromkeys(lbs, 5))

    def broken(provider: str, wanted: Mapping[str, int]) -> set[str]:
        raise RuntimeError("the nodes could not be listed")

    def silent(provider: str, wanted: Mapping[str, int]) -> set[str] | None:
        return None  # a node did not answer

    later = time.time() + INTERVAL + 1
    assert check_due(db, broken, later, INTERVAL) == CheckResult(held=0, undecided=2)
    assert check_due(db, silent, later, INTERVAL) == CheckResult(held=0, undecided=2)
    assert job_queue.enqueue_resync(db, later, INTERVAL) == 2


def test_converges_wait_for_an_undecided_check_one_interval_at_most() -> None:
    pacing = ResyncPacing(INTERVAL)
    decided, undecided = CheckResult(held=3, undecided=0), CheckResult(held=0, undecided=5)
    assert pacing.may_converge(decided, 0.0)
    assert not pacing.may_converge(undecided, 1.0)  # just started: its nodes not heard yet
    assert not pacing.may_converge(undecided, 1.0 + INTERVAL - 1)
    assert pacing.may_converge(undecided, 1.0 + INTERVAL)  # never answers: converged anyway
    assert pacing.may_converge(decided, 200.0)
    assert not pacing.may_converge(undecided, 201.0)  # a new spell waits again


class VersionedNoop(NoopProvider):
    """The noop provider, saying which version it sent (as the distributed one does)."""

    def apply(self, graph: LoadBalancer, fence: Any, *, rebuild: bool = False) -> ApplyResult:
        super().apply(graph, fence, rebuild=rebuild)
        return ApplyResult(serving=True, detail="noop", version=4242)


def _applied_version(db: Database, lb_id: str) -> int | None:
    with db.read_connection() as conn:
        return conn.execute(
            select(ConvergeJobRow.applied_version).where(ConvergeJobRow.loadbalancer_id == lb_id)
        ).scalar_one()


def test_a_converge_keeps_the_version_its_provider_sent(idle_plane: Any, idle_api: Api) -> None:
    (lb,) = _settled(idle_plane, idle_api, 1)
    db = idle_plane.database
    assert _applied_version(db, lb) is None  # the noop provider sends no version
    settings = idle_plane.settings
    providers = ProviderRegistry({"noop": VersionedNoop(ProviderContext(settings, db))}, "noop")
    worker = Worker(db, JobRunner(db, Converger(db, providers, roll_up), settings.worker),
                    settings.worker)  # fmt: skip
    assert job_queue.enqueue_resync(db, time.time()) == 1
    assert worker.run_once()
    assert _applied_version(db, lb) == 4242
