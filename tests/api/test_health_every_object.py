"""The health path on a load balancer with one of every kind of object, on both databases.

A heartbeat once failed on every load balancer that had an L7 rule: the status UPDATE
named a bind parameter ``value``, which is also a column of ``l7rules``, so SQLAlchemy
refused to compile it and members stayed OFFLINE however their backends fared. These
tests run heartbeats and flushes over a tree with listeners of several protocols, an L7
policy with rules, pools with and without a monitor, and members, and check every status.
"""

from __future__ import annotations

from typing import Any

from lbaas.db import tables
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model import health
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancerId, MemberId, PoolId
from tests.api.test_amphorae import add_amphora
from tests.support.api_client import Api

ONLINE = OperatingStatus.ONLINE.value


class EveryObject:
    """LB; HTTP, TCP and UDP listeners; an L7 policy with two rules; three pools; members."""

    def __init__(self, api: Api, plane: Any) -> None:
        lb = api.create_lb()
        self.lb = lb["id"]
        http = api.create_listener(self.lb)
        tcp = api.create_listener(self.lb, protocol="TCP", protocol_port=8443)
        udp = api.create_listener(self.lb, protocol="UDP", protocol_port=53)
        self.listeners = [http["id"], tcp["id"], udp["id"]]
        web = api.create_pool(self.lb, listener_id=http["id"])
        api.create_healthmonitor(self.lb, web["id"])
        api_pool = api.create_pool(self.lb, protocol="HTTP")
        plain = api.create_pool(self.lb, listener_id=tcp["id"], protocol="TCP")
        dns = api.create_pool(self.lb, listener_id=udp["id"], protocol="UDP")
        self.pools: dict[str, list[str]] = {p["id"]: [] for p in (web, api_pool, plain, dns)}
        for n, pool in enumerate((web, web, api_pool, plain, dns)):
            member = api.create_member(self.lb, pool["id"], address=f"192.0.2.{n + 10}")
            self.pools[pool["id"]].append(member["id"])
        policy = api.create_l7policy(
            self.lb, http["id"], action="REDIRECT_TO_POOL", redirect_pool_id=api_pool["id"]
        )
        self.policy = policy["id"]
        self.rules = [
            api.create_l7rule(self.lb, self.policy)["id"],
            api.create_l7rule(self.lb, self.policy, type="HEADER", key="X-A", value="b")["id"],
        ]
        self.amphora = AmphoraId(add_amphora(plane, self.lb))
        self.store = SqlHealthStore(plane.database)
        self.processor = HeartbeatProcessor(self.store)

    @property
    def web_members(self) -> list[str]:
        return next(iter(self.pools.values()))

    def beat(self, down: frozenset[str] = frozenset()) -> HeartbeatOutcome:
        listeners = {
            ListenerId(lid): health.ListenerHealth(
                health.ListenerState.OPEN, health.ListenerCounters(bytes_in=7)
            )
            for lid in self.listeners
        }
        pools = {
            PoolId(pid): health.PoolHealth(
                health.PoolState.UP,
                {
                    MemberId(m): health.MemberState.DOWN if m in down else health.MemberState.UP
                    for m in members
                },
            )
            for pid, members in self.pools.items()
        }
        report = health.HealthReport(LoadBalancerId(self.lb), listeners, pools)
        return self.processor.process(self.amphora, 1, report)


def statuses(plane: Any, row_type: Any, ids: list[str]) -> dict[str, str]:
    with plane.database.read() as session:
        return {i: session.get(row_type, i).operating_status for i in ids}


def test_every_object_gets_its_status_and_a_dead_member_is_reported(api: Api, plane: Any) -> None:
    scene = EveryObject(api, plane)
    assert scene.beat() is HeartbeatOutcome.APPLIED
    scene.store.flush()
    monitored = scene.web_members
    unmonitored = [m for ms in list(scene.pools.values())[1:] for m in ms]
    assert set(statuses(plane, tables.MemberRow, monitored).values()) == {ONLINE}
    # Without a monitor HAProxy cannot say: Octavia's NO_MONITOR.
    no_monitor = OperatingStatus.NO_MONITOR.value
    assert set(statuses(plane, tables.MemberRow, unmonitored).values()) == {no_monitor}
    assert set(statuses(plane, tables.PoolRow, list(scene.pools)).values()) == {ONLINE}
    assert set(statuses(plane, tables.ListenerRow, scene.listeners).values()) == {ONLINE}
    assert statuses(plane, tables.L7PolicyRow, [scene.policy]) == {scene.policy: ONLINE}
    assert set(statuses(plane, tables.L7RuleRow, scene.rules).values()) == {ONLINE}
    assert statuses(plane, tables.LoadBalancerRow, [scene.lb]) == {scene.lb: ONLINE}

    dead = scene.web_members[0]
    assert scene.beat(frozenset({dead})) is HeartbeatOutcome.APPLIED
    scene.store.flush()
    assert statuses(plane, tables.MemberRow, [dead]) == {dead: OperatingStatus.ERROR.value}
    web = next(iter(scene.pools))
    assert statuses(plane, tables.PoolRow, [web]) == {web: OperatingStatus.DEGRADED.value}
    assert statuses(plane, tables.LoadBalancerRow, [scene.lb]) == {
        scene.lb: OperatingStatus.DEGRADED.value
    }
