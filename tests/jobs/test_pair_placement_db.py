"""Pair members placed by the database store (real SQLite): two distinct enrolled hosts.

The provider-level rules are tested on fakes (``tests/unit/providers/
test_amphora_pair_fleet.py``); this checks the SQL behind them: the hosts registry read
inside the fenced write, ``compute_id`` recorded, the refusal writing nothing, and
``lbaas serve``'s own agent alone taking both members.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from lbaas.db.hosts import host_repo
from lbaas.db.jobs import job_queue
from lbaas.db.tables import AmphoraRow
from lbaas.model.enums import AmphoraRole
from lbaas.model.fleet import HostAddress
from lbaas.providers.amphora.placement import PairPlacementImpossible
from lbaas.providers.amphora.store.base import PairSite
from lbaas.providers.amphora.store.database import DatabaseAmphoraStore
from tests.support.api_client import LOOPBACK_SUBNET, Api

SITE = PairSite(zone="nova", legacy_host="127.0.0.1", single_host="local")


def _claim(plane: Any, api: Api) -> job_queue.Claim:
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    assert api.post("/v2/lbaas/loadbalancers", body).status_code == 201
    claim = job_queue.claim_next(plane.database, "worker-a", time.time(), lease_seconds=30)
    assert claim is not None
    return claim


def _enrol(plane: Any, *host_ids: str, zone: str = "nova") -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    with plane.database.write() as session:
        for i, host_id in enumerate(host_ids):
            where = HostAddress(host_id, "127.0.0.1", 9440 + i)
            host_repo.enrol(session, where, zone=zone, capacity=10, now=now, up_at=time.time())


def _join(store: DatabaseAmphoraStore, claim: job_queue.Claim, pair_hosts: set[str]) -> Any:
    return store.add_pair_member(
        claim,
        site=SITE,
        pair_hosts=frozenset(pair_hosts),
        avoid=frozenset(),
        vip_subnet_id=LOOPBACK_SUBNET,
        vip_address="127.0.0.5",
        ha_port_id=None,
        role=AmphoraRole.MASTER,
        priority=200,
        vrrp_id=7,
    )


def _compute_ids(plane: Any, lb_id: str) -> list[str | None]:
    with plane.database.read() as session:
        query = select(AmphoraRow).where(AmphoraRow.loadbalancer_id == lb_id)
        return [row.compute_id for row in session.scalars(query)]


def test_members_go_to_two_distinct_hosts_of_the_zone(idle_plane: Any, idle_api: Api) -> None:
    claim = _claim(idle_plane, idle_api)
    _enrol(idle_plane, "host-a", "host-b")
    _enrol(idle_plane, "host-c", zone="rack-2")
    store = DatabaseAmphoraStore(idle_plane.database)
    first = _join(store, claim, set())
    assert first.host is not None
    second = _join(store, claim, {first.host.host_id})
    assert second.host is not None
    assert {first.host.host_id, second.host.host_id} == {"host-a", "host-b"}
    assert sorted(_compute_ids(idle_plane, claim.loadbalancer_id)) == ["host-a", "host-b"]  # type: ignore[type-var]
    members = store.pair_members(claim.loadbalancer_id)
    assert {m.host.host_id for m in members if m.host} == {"host-a", "host-b"}
    with pytest.raises(PairPlacementImpossible):  # no third host of the zone
        _join(store, claim, {"host-a", "host-b"})
    assert len(_compute_ids(idle_plane, claim.loadbalancer_id)) == 2


def test_one_enrolled_host_refuses_a_pair_and_writes_nothing(
    idle_plane: Any, idle_api: Api
) -> None:
    claim = _claim(idle_plane, idle_api)
    _enrol(idle_plane, "host-a")
    store = DatabaseAmphoraStore(idle_plane.database)
    with pytest.raises(PairPlacementImpossible) as refused:
        _join(store, claim, set())
    assert "only 1 can take one in zone 'nova'" in refused.value.user_message
    assert _compute_ids(idle_plane, claim.loadbalancer_id) == []


def test_serves_own_agent_alone_takes_both_members(idle_plane: Any, idle_api: Api) -> None:
    claim = _claim(idle_plane, idle_api)
    _enrol(idle_plane, "local")
    store = DatabaseAmphoraStore(idle_plane.database)
    first = _join(store, claim, set())
    second = _join(store, claim, {"local"})
    assert first.host == second.host and first.host is not None
    assert _compute_ids(idle_plane, claim.loadbalancer_id) == ["local", "local"]


def test_agent_of_tells_when_the_host_was_last_heard(idle_plane: Any, idle_api: Api) -> None:
    # What a failover reads to skip a host that has missed its heartbeats.
    claim = _claim(idle_plane, idle_api)
    before = time.time()
    _enrol(idle_plane, "host-a", "host-b")
    store = DatabaseAmphoraStore(idle_plane.database)
    placed = _join(store, claim, set())
    where = store.agent_of(placed.amphora_id)
    assert where is not None and where.host == placed.host
    assert where.heard_at is not None and before <= where.heard_at <= time.time()
