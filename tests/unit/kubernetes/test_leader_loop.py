"""The elector's loop with a fake clock advanced by its own sleeps (no real waiting) and
an in-memory Lease store: a term stops at the renew deadline, and a controller that fails
ends the elector after the Lease is released."""

from __future__ import annotations

import asyncio

import pytest

from lbaas.integrations.kubernetes.election import Election
from lbaas.integrations.kubernetes.leader import LeaderElector
from tests.support.clock import FakeClock
from tests.support.fake_leases import LeaseStore, StoreLeases
from tests.unit.kubernetes.test_election import TIMINGS, WALL, spec

pytestmark = pytest.mark.asyncio


def elector(clock: FakeClock, leases: StoreLeases) -> LeaderElector:
    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    election = Election("a", "default", "lead", TIMINGS, clock, lambda: WALL)
    return LeaderElector(leases, election, sleep)


async def test_a_term_is_cancelled_once_the_renew_deadline_passes() -> None:
    clock = FakeClock()
    leases = StoreLeases(LeaseStore())
    subject = elector(clock, leases)
    started = asyncio.Event()
    stopped = asyncio.Event()

    async def lead() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    run = asyncio.create_task(subject.run(lead))
    try:
        await asyncio.wait_for(started.wait(), 30)
        cut_at = clock.now
        leases.severed = True
        await asyncio.wait_for(stopped.wait(), 30)
        assert not subject.leading
        assert clock.now - cut_at <= TIMINGS.renew_deadline
        assert subject.terms == 1
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
    assert spec(leases.store)["holderIdentity"] == "a", "no release past the deadline"


async def test_a_failed_controller_ends_the_elector_after_the_release() -> None:
    clock = FakeClock()
    leases = StoreLeases(LeaseStore())

    async def lead() -> None:
        raise RuntimeError("the controller broke")

    with pytest.raises(RuntimeError, match="the controller broke"):
        await asyncio.wait_for(elector(clock, leases).run(lead), 30)
    assert spec(leases.store)["holderIdentity"] == ""
