"""The same workflow through openstacksdk's ``load_balancer`` proxy, unmodified."""

from __future__ import annotations

import time
from typing import Any

import openstack
import pytest

from tests.e2e.conftest import Served

pytestmark = [pytest.mark.slow]
LOOPBACK_SUBNET = "7f000a00-0000-4000-8000-000000000001"


def _wait(lb: Any, conn: Any) -> Any:
    return conn.load_balancer.wait_for_load_balancer(lb.id, interval=0.1, wait=60)


def run_sdk_workflow(url: str) -> None:
    conn = openstack.connect(
        auth_type="none", auth={"endpoint": url}, load_balancer_api_version="2"
    )
    lb = conn.load_balancer.create_load_balancer(name="sdk", vip_subnet_id=LOOPBACK_SUBNET)
    lb = _wait(lb, conn)
    assert lb.provisioning_status == "ACTIVE"
    listener = conn.load_balancer.create_listener(
        name="http", protocol="HTTP", protocol_port=8080, load_balancer_id=lb.id
    )
    _wait(lb, conn)
    pool = conn.load_balancer.create_pool(
        name="pool1", protocol="HTTP", lb_algorithm="ROUND_ROBIN", listener_id=listener.id
    )
    _wait(lb, conn)
    member = conn.load_balancer.create_member(pool, address="192.168.1.14", protocol_port=80)
    _wait(lb, conn)
    conn.load_balancer.create_health_monitor(
        pool_id=pool.id, type="HTTP", delay=5, timeout=3, max_retries=3
    )
    _wait(lb, conn)
    shared = conn.load_balancer.create_pool(
        name="shared", protocol="HTTP", lb_algorithm="ROUND_ROBIN", loadbalancer_id=lb.id
    )
    _wait(lb, conn)
    policy = conn.load_balancer.create_l7_policy(
        listener_id=listener.id, action="REDIRECT_TO_POOL", redirect_pool_id=shared.id
    )
    _wait(lb, conn)
    conn.load_balancer.create_l7_rule(
        policy, type="HOST_NAME", compare_type="STARTS_WITH", value="server"
    )
    _wait(lb, conn)
    assert [m.id for m in conn.load_balancer.members(pool)] == [member.id]
    stats = conn.load_balancer.get_load_balancer_statistics(lb.id)
    assert stats.total_connections == 0
    conn.load_balancer.update_load_balancer(lb.id, name="sdk2")
    lb = _wait(lb, conn)
    assert lb.name == "sdk2"
    conn.load_balancer.delete_load_balancer(lb.id, cascade=True)
    deadline = time.monotonic() + 60
    while conn.load_balancer.find_load_balancer(lb.id) is not None:
        assert time.monotonic() < deadline, "not deleted"
        time.sleep(0.1)


def test_workflow_with_openstacksdk(noop_server: Served) -> None:
    run_sdk_workflow(noop_server.url)
