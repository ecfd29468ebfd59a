"""A VIP's security groups on a distributed load balancer, end to end, with real clients.

Needs root. The lab of ``test_distributed_allowed_cidrs`` (two nodes running ``lbaas
agent``, two backends, the control plane, and ``x1``, a client on no node that enters
through the entry node; all its namespaces removed by the fixture even on failure). A
security group allows TCP port 80 from n1's address only and the load balancer names it
in ``vip_sg_ids``. Then:

- n1's client is served; x1's SYN is dropped by the entry node's prerouting chain (the
  group's networks become the listener's interval set) and its connect times out;
- a rule for x1 created through the Networking API converges the load balancer (no write
  to it) and x1 is served soon after (the time is printed), while n1's established
  connection keeps being answered;
- n1's rule deleted, n1's new connections are refused and its established one still
  answers (the NAT chains see a flow's first packet only).
"""

from __future__ import annotations

import time

import pytest
import test_distributed_allowed_cidrs as cidrs_test
from dist_lab import BACKEND_PORT, DistLab
from test_distributed_allowed_cidrs import LB, attempt, hold, ok, release, served_soon, settle

pytestmark = [pytest.mark.root, pytest.mark.slow]
lab = cidrs_test.lab  # the same lab fixture


def _allow(lab: DistLab, group_id: str, role: str) -> str:
    rule = {"security_group_id": group_id, "direction": "ingress", "protocol": "tcp",
            "port_range_min": 80, "port_range_max": 80,
            "remote_ip_prefix": f"{lab.address(role)}/32"}  # fmt: skip
    made = ok(lab, "POST", "/v2.0/security-group-rules", {"security_group_rule": rule})
    return str(made["security_group_rule"]["id"])


def _refused_soon(lab: DistLab, role: str) -> None:
    deadline = time.monotonic() + 60
    while attempt(lab, role) != "timeout":
        assert time.monotonic() < deadline, f"{role} still served\n{lab.log('ctl')}"


def test_only_what_the_vip_groups_allow_is_balanced(lab: DistLab) -> None:
    group = ok(lab, "POST", "/v2.0/security-groups", {"security_group": {"name": "front"}})
    group_id = group["security_group"]["id"]
    n1_rule = _allow(lab, group_id, "n1")
    pool = {"name": "p", "protocol": "TCP", "lb_algorithm": "MAGLEV", "members": [
        {"address": lab.address(f"b{i}"), "protocol_port": BACKEND_PORT,
         "subnet_id": lab.subnet_id} for i in (1, 2)]}  # fmt: skip
    listener = {"protocol": "TCP", "protocol_port": 80, "default_pool": pool}
    lb = ok(lab, "POST", LB, {"loadbalancer": {
        "name": "groups", "provider": "distributed", "vip_subnet_id": lab.subnet_id,
        "vip_address": lab.address("vip"), "vip_sg_ids": [group_id],
        "listeners": [listener]}})["loadbalancer"]  # fmt: skip
    settle(lab, lb["id"])

    assert {attempt(lab, "n1") for _ in range(4)} <= {"b1", "b2"}
    assert attempt(lab, "x1") == "timeout"

    process, held = hold(lab)
    try:
        greeting = held.greeting()
        assert greeting in ("b1", "b2")
        started = time.monotonic()
        _allow(lab, group_id, "x1")
        print(f"x1 served {served_soon(lab, 'x1', started):.2f}s after its rule was created")
        assert held.ask("still there") == f"{greeting} still there"

        deleted = lab.call("DELETE", f"/v2.0/security-group-rules/{n1_rule}")
        assert deleted[0] == 204, deleted
        _refused_soon(lab, "n1")
        assert held.ask("and now") == f"{greeting} and now"
        assert attempt(lab, "x1") in ("b1", "b2")
    finally:
        release(process)
