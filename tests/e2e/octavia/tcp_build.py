"""A TCP load balancer of ``--provider lbaas-distributed`` built with Octavia's stock CLI,
and the kill of one member's backend timed in Octavia's status tree. Shared by the
one-node test (``test_provider_distributed.py``) and the lab's
(``tests/e2e/lab/test_lab_octavia_distributed.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tests.e2e.octavia.both_sides import member_status
from tests.e2e.octavia.conftest import PROJECT, Front
from tests.support.waiting import wait_until

PORT = 80
POOL = "octa-l4-pool"


def build_tcp(
    cli: Any,
    vip_subnet: str,
    vip: str,
    members: Sequence[tuple[str, int]],
    member_subnet: str | None = None,
) -> dict[str, Any]:
    """A load balancer, a TCP listener on PORT, a SOURCE_IP_PORT pool (the kernel provider
    refuses ROUND_ROBIN), ``members`` and a TCP monitor (1 s, one failure is down); each
    command with ``--wait``. The load balancer as Octavia created it."""
    lb: dict[str, Any] = cli.json(
        "loadbalancer", "create", "--name", "octa-l4", "--project", PROJECT,
        "--provider", "lbaas-distributed", "--vip-subnet-id", vip_subnet,
        "--vip-address", vip, "--wait",
    )  # fmt: skip
    cli.json("loadbalancer", "listener", "create", "--name", "octa-tcp", "--protocol", "TCP",
             "--protocol-port", str(PORT), "--wait", lb["id"])  # fmt: skip
    cli.json("loadbalancer", "pool", "create", "--name", POOL, "--lb-algorithm",
             "SOURCE_IP_PORT", "--listener", "octa-tcp", "--protocol", "TCP", "--wait")  # fmt: skip
    subnet = ["--subnet-id", member_subnet] if member_subnet else []
    for address, port in members:
        cli.json("loadbalancer", "member", "create", "--address", address, "--protocol-port",
                 str(port), *subnet, "--wait", POOL)  # fmt: skip
    cli.json("loadbalancer", "healthmonitor", "create", "--delay", "1", "--timeout", "1",
             "--max-retries", "1", "--max-retries-down", "1", "--type", "TCP", "--wait",
             POOL)  # fmt: skip
    return lb


def seconds_to_down(front: Front, lb_id: str, address: str, kill: Callable[[], None]) -> float:
    """``kill`` the backend at ``address``; seconds until its member is ERROR or OFFLINE in
    Octavia (failing after 10 s, issue 33's bound), also in ``status show``."""
    kill()
    killed = time.monotonic()
    wait_until(
        lambda: member_status(front, lb_id, "address")[address] in ("ERROR", "OFFLINE"),
        10,
        "the killed backend's member ERROR or OFFLINE in Octavia within 10 s",
    )
    took = time.monotonic() - killed
    status = front.cli.run("loadbalancer", "status", "show", lb_id)
    assert '"operating_status": "ERROR"' in status or '"operating_status": "OFFLINE"' in status
    return took
