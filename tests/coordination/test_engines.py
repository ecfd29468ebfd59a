"""The same lease rules on every engine: embedded, PostgreSQL, etcd (real servers).

Expiry is waited for, never timed: a test renews with a short TTL and polls until the
engine no longer lists the lease, with a generous deadline.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.coordination.base import CoordinationUnavailable, Coordinator
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.coordination.etcd import EtcdCoordinator
from lbaas.coordination.postgres import PostgresCoordinator
from tests.coordination.engines import POSTGRES_URL, etcd_server, postgres_coordinator


@pytest.fixture(params=["embedded", "postgresql", "etcd"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Coordinator]:
    if request.param == "embedded":
        yield EmbeddedCoordinator()
    elif request.param == "postgresql":
        with postgres_coordinator() as pg:
            yield pg
    else:
        with etcd_server(tmp_path) as url:
            etcd = EtcdCoordinator(url, prefix=f"/t-{tmp_path.name}/")
            yield etcd
            etcd.close()


def _holders(engine: Coordinator, prefix: str) -> dict[str, str]:
    return {lease.name: lease.holder for lease in engine.live(prefix)}


def test_a_lease_is_one_holders_until_released(engine: Coordinator) -> None:
    assert engine.renew("tier/h1", "h1", 30)
    assert engine.renew("tier/h1", "h1", 30)  # renewing one's own
    assert not engine.renew("tier/h1", "h2", 30)  # another holder is refused
    assert engine.renew("tier/h2", "h2", 30)
    assert engine.renew("leader/sweep", "ctl-a", 30)
    assert _holders(engine, "tier/") == {"tier/h1": "h1", "tier/h2": "h2"}
    lease = engine.live("tier/h1")[0]
    assert 0 < lease.remaining <= 30
    engine.release("tier/h1", "h1")
    assert _holders(engine, "tier/") == {"tier/h2": "h2"}
    assert engine.renew("tier/h1", "h3", 30)  # free again: anyone may take it


def test_an_unrenewed_lease_expires_by_the_engines_clock_and_can_be_taken(
    engine: Coordinator,
) -> None:
    assert engine.renew("leader/poll", "ctl-a", 1)
    assert not engine.renew("leader/poll", "ctl-b", 1)
    deadline = time.monotonic() + 60
    while _holders(engine, "leader/"):
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.05)
    assert engine.renew("leader/poll", "ctl-b", 1)
    assert _holders(engine, "leader/") == {"leader/poll": "ctl-b"}


def test_an_engine_that_cannot_be_reached_is_unavailable_not_refused() -> None:
    postgres = PostgresCoordinator("postgresql://nobody@127.0.0.1:1/none", timeout=1)
    etcd = EtcdCoordinator("http://127.0.0.1:1", timeout=1)
    for unreachable in (postgres, etcd):
        with pytest.raises(CoordinationUnavailable):
            unreachable.renew("tier/h1", "h1", 1)
        with pytest.raises(CoordinationUnavailable):
            unreachable.live("tier/")


def test_bad_leases_and_table_names_are_refused() -> None:
    with pytest.raises(ValueError, match="ttl"):
        EmbeddedCoordinator().renew("tier/h1", "h1", 0)
    with pytest.raises(ValueError, match="plain lower-case"):
        PostgresCoordinator("postgresql://x@127.0.0.1/test", "lease; drop table x")
    with pytest.raises(ValueError, match="http"):
        EtcdCoordinator("127.0.0.1:2379")


def test_the_first_postgresql_process_makes_the_lease_table() -> None:
    """No process runs a setup step first: the first to connect makes the table (a
    control plane whose processes all start at once on an empty database leads)."""
    table = f"lbaas_lease_t_{uuid.uuid4().hex[:10]}"
    first, second = (
        PostgresCoordinator(POSTGRES_URL, table),
        PostgresCoordinator(POSTGRES_URL, table),
    )
    try:
        assert first.renew("leader/housekeeping", "ctl", 5)
        assert not second.renew("leader/housekeeping", "ctl2", 5)
        assert _holders(second, "leader/") == {"leader/housekeeping": "ctl"}
    finally:
        first.drop()
        first.close()
        second.close()
