"""Issue 33 through a real Octavia: the stock ``openstack`` CLI asks Octavia's API for
``--provider lbaas`` and lbaas's HAProxy serves the VIP.

Octavia keeps the objects and the users; the lbaas provider driver creates each one in
lbaas with the same id, and the provider agent in Octavia's driver agent brings statuses
(a backend killed shows in ``status show``) and counters (``stats show``) back.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.e2e.octavia.both_sides import gone, member_status, nothing_left
from tests.e2e.octavia.conftest import PROJECT, Sides
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]


def _names(url: str, count: int) -> list[str]:
    return [httpx.get(url, timeout=5).text for _ in range(count)]


def _build(sides: Sides, backends: list[HttpBackend], vip: str, port: int) -> dict[str, Any]:
    cli = sides.cli
    lb: dict[str, Any] = cli.json(
        "loadbalancer",
        "create",
        "--name",
        "octa-web",
        "--project",
        PROJECT,
        "--provider",
        "lbaas",
        "--vip-subnet-id",
        LOOPBACK_SUBNET_ID,
        "--vip-address",
        vip,
        "--wait",
    )
    cli.json(
        "loadbalancer",
        "listener",
        "create",
        "--name",
        "octa-http",
        "--protocol",
        "HTTP",
        "--protocol-port",
        str(port),
        "--wait",
        lb["id"],
    )
    cli.json(
        "loadbalancer",
        "pool",
        "create",
        "--name",
        "octa-pool",
        "--lb-algorithm",
        "ROUND_ROBIN",
        "--listener",
        "octa-http",
        "--protocol",
        "HTTP",
        "--wait",
    )
    for backend in backends:
        cli.json(
            "loadbalancer",
            "member",
            "create",
            "--address",
            backend.address,
            "--protocol-port",
            str(backend.port),
            "--wait",
            "octa-pool",
        )
    cli.json(
        "loadbalancer",
        "healthmonitor",
        "create",
        "--delay",
        "1",
        "--timeout",
        "1",
        "--max-retries",
        "1",
        "--type",
        "HTTP",
        "--wait",
        "octa-pool",
    )
    return lb


def test_a_load_balancer_of_provider_lbaas_through_octavias_cli(
    sides: Sides, backends: list[HttpBackend]
) -> None:
    vip = sides.vip(9)
    port = free_port_on(vip)
    lb = _build(sides, backends, vip, port)
    lbaas_side = sides.lbaas_api.get(f"/v2/lbaas/loadbalancers/{lb['id']}").json()["loadbalancer"]
    assert (lbaas_side["provider"], lbaas_side["project_id"]) == ("amphora", PROJECT)
    assert lbaas_side["vip_address"] == vip
    ports = {b.port for b in backends}
    wait_until(
        lambda: set(member_status(sides, lb["id"]).values()) == {"ONLINE"},
        30,
        "both members ONLINE in Octavia",
    )
    assert set(member_status(sides, lb["id"])) == ports

    names = _names(f"http://{vip}:{port}/", 10)
    assert sorted(set(names)) == ["one", "two"], names
    assert [b.requests_seen > 0 for b in backends] == [True, True]

    def counted() -> bool:
        stats = sides.octavia_api.get(f"/v2/lbaas/loadbalancers/{lb['id']}/stats").json()
        return int(stats["stats"]["total_connections"]) >= 10

    wait_until(counted, 30, "Octavia's stats to count the 10 requests")
    shown = sides.cli.json("loadbalancer", "stats", "show", lb["id"])
    assert shown["total_connections"] >= 10 and shown["bytes_out"] > 0

    backends[1].stop()
    killed = time.monotonic()
    wait_until(
        lambda: member_status(sides, lb["id"])[backends[1].port] in ("ERROR", "OFFLINE"),
        10,
        "the killed backend's member to show ERROR or OFFLINE in Octavia within 10 s",
    )
    print(f"member down in Octavia {time.monotonic() - killed:.1f} s after the kill")
    status = sides.cli.run("loadbalancer", "status", "show", lb["id"])
    assert '"operating_status": "ERROR"' in status or '"operating_status": "OFFLINE"' in status
    assert set(_names(f"http://{vip}:{port}/", 4)) == {"one"}

    sides.cli.run("loadbalancer", "delete", "--cascade", "--wait", lb["id"])
    wait_until(lambda: gone(sides, lb["id"]), 30, "the load balancer gone on both sides")
    nothing_left(sides)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://{vip}:{port}/", timeout=2)
