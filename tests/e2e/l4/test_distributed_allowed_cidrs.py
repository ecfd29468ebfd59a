"""allowed_cidrs on a distributed load balancer, end to end, with real clients.

Needs root. ``dist_lab.py`` builds the namespaces (tag ``ac…``: its own names, deleted by
the fixture even when the test fails): two nodes running ``lbaas agent``, two backends,
the control plane, and ``x1``, a client on no node that enters through the entry node.
A TCP listener allows only n1's address. Then:

- n1's client is served (its flows balanced on its own node);
- n2's client is refused by its own node's output chain and x1 by the entry node's
  prerouting chain: either way the SYN is dropped silently, so the client gets nothing
  and its connect times out (no reset, no ICMP: a NAT chain cannot reject; TCP retries a
  SYN its own node dropped, as one lost on the way);
- an update allowing x1 too reaches the nodes as an element update: x1 is served soon
  after (the time is printed: the project keeps timing out of assertions), while an
  established connection from n1 keeps being answered through the change;
- an update leaving n1 out refuses its new connections, and its established one still
  answers (the NAT chains see a flow's first packet only; conntrack keeps the rest).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from dist_lab import BACKEND_PORT, DistLab
from l4_lab import PEERS, HeldConnection

pytestmark = [pytest.mark.root, pytest.mark.slow]
LB = "/v2/lbaas/loadbalancers"
LISTENERS = "/v2/lbaas/listeners"

# One connection attempt: the greeting's first word, or how it failed.
# Each client sends from its own address: on the entry node, which holds the VIP, a
# connect to the VIP would otherwise leave from the VIP itself (a local destination's
# source), which no tenant's allowed_cidrs names (see docs/architecture.md).
ATTEMPT = (
    "import errno, socket, sys\n"
    "try:\n"
    "    to, source = (sys.argv[1], int(sys.argv[2])), (sys.argv[3], 0)\n"
    "    with socket.create_connection(to, timeout=2, source_address=source) as c:\n"
    "        print(c.makefile().readline().split()[0])\n"
    "except socket.timeout:\n"
    "    print('timeout')\n"
    "except OSError as exc:\n"
    "    print(errno.errorcode.get(exc.errno or 0, repr(exc)))\n"
)


@pytest.fixture
def lab() -> Iterator[DistLab]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    built = DistLab(backends=2, tag="ac" + uuid.uuid4().hex[:4])
    try:
        built.build()
        for node in ("n1", "n2"):
            built.start_agent(node)
        built.start_control_plane()
        yield built
    finally:
        built.close()


def ok(lab: DistLab, method: str, path: str, body: Any = None) -> Any:
    status, answer = lab.call(method, path, body)
    assert status < 300, f"{method} {path}: {status} {answer}"
    return answer


def settle(lab: DistLab, lb_id: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        lb = ok(lab, "GET", f"{LB}/{lb_id}")["loadbalancer"]
        assert lb["provisioning_status"] != "ERROR", lb
        if lb["provisioning_status"] == "ACTIVE":
            return
        assert time.monotonic() < deadline, f"{lb_id} not ACTIVE\n{lab.log('ctl')}"
        time.sleep(0.1)


def attempt(lab: DistLab, role: str) -> str:
    vip, source = lab.address("vip"), lab.address(role)
    return lab.in_ns(role, sys.executable, "-c", ATTEMPT, vip, "80", source).strip()


def allow(lab: DistLab, listener_id: str, lb_id: str, *roles: str) -> float:
    """Allow exactly ``roles``' addresses; seconds until the load balancer is ACTIVE again."""
    cidrs = [f"{lab.address(role)}/32" for role in roles]
    started = time.monotonic()
    ok(lab, "PUT", f"{LISTENERS}/{listener_id}", {"listener": {"allowed_cidrs": cidrs}})
    settle(lab, lb_id)
    return time.monotonic() - started


def served_soon(lab: DistLab, role: str, started: float) -> float:
    """Seconds from ``started`` until ``role`` is served (a minute at most)."""
    while attempt(lab, role) not in ("b1", "b2"):
        assert time.monotonic() - started < 60, f"{role} never served\n{lab.log('ctl')}"
    return time.monotonic() - started


def hold(lab: DistLab) -> tuple[subprocess.Popen[str], HeldConnection]:
    argv = ["ip", "netns", "exec", lab.ns("n1"), sys.executable, PEERS, "hold",
            lab.address("vip"), "80", lab.address("n1")]  # fmt: skip
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    return process, HeldConnection(process)


def release(process: subprocess.Popen[str]) -> None:
    """Stop a ``hold`` process and close its pipes."""
    process.kill()
    process.wait(10)
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


def test_only_allowed_sources_are_served_and_changes_keep_established_flows(
    lab: DistLab,
) -> None:
    pool = {"name": "p", "protocol": "TCP", "lb_algorithm": "MAGLEV", "members": [
        {"address": lab.address(f"b{i}"), "protocol_port": BACKEND_PORT,
         "subnet_id": lab.subnet_id} for i in (1, 2)]}  # fmt: skip
    listener = {"protocol": "TCP", "protocol_port": 80, "default_pool": pool,
                "allowed_cidrs": [f"{lab.address('n1')}/32"]}  # fmt: skip
    lb = ok(lab, "POST", LB, {"loadbalancer": {
        "name": "cidrs", "provider": "distributed", "vip_subnet_id": lab.subnet_id,
        "vip_address": lab.address("vip"), "listeners": [listener]}})["loadbalancer"]  # fmt: skip
    lb_id = lb["id"]
    settle(lab, lb_id)
    [listener_id] = [item["id"] for item in lb["listeners"]]

    assert {attempt(lab, "n1") for _ in range(8)} <= {"b1", "b2"}
    assert attempt(lab, "n2") == "timeout"  # dropped by n2's own output chain
    assert attempt(lab, "x1") == "timeout"  # dropped silently by the entry node

    process, held = hold(lab)
    try:
        greeting = held.greeting()
        assert greeting in ("b1", "b2")
        took = allow(lab, listener_id, lb_id, "n1", "x1")
        served = served_soon(lab, "x1", time.monotonic() - took)
        print(f"x1 served {served:.2f}s after the PUT (ACTIVE after {took:.2f}s)")
        assert held.ask("still there") == f"{greeting} still there"
        assert attempt(lab, "n2") == "timeout"

        allow(lab, listener_id, lb_id, "x1")
        assert attempt(lab, "n1") == "timeout"  # new flows from n1 refused now
        assert held.ask("and now") == f"{greeting} and now"  # its established one kept
        assert attempt(lab, "x1") in ("b1", "b2")
    finally:
        release(process)
