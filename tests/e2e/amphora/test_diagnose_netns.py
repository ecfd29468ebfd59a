"""``lbaas diagnose`` when the VIP address is removed from a netns amphora while its
members stay healthy: the agent's own probe (made inside the amphora's namespace, where
clients arrive) stops answering, and the verdict names the vip hop, not the members.

Needs root (netns mode). Reuses ``test_netns_serve``'s world: ``lbaas serve`` with two
subnets of the test's own, and namespaces of the test plugged into their bridges. Traffic
goes only to addresses of those subnets and to 127.0.0.1 (the API)."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

import pytest

from lbaas.amphora.plumbing import bridge_name, namespace_name
from tests.e2e.amphora.serve_process import diagnose
from tests.e2e.amphora.test_netns_serve import (  # noqa: F401 - world is a fixture
    BACKEND_PORT,
    LISTENER_PORT,
    NetnsWorld,
    get_from_host,
    world,
)
from tests.support.waiting import wait_for_value, wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]

TIMEOUT = 90.0


def vip_device(namespace: str, vip: str) -> tuple[str, str]:
    """The device holding ``vip`` in ``namespace`` and the address with its prefix."""
    lines = subprocess.run(
        ["ip", "-n", namespace, "-o", "-4", "addr", "show"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for line in lines:
        fields = line.split()
        cidr = fields[3]
        if cidr.split("/")[0] == vip:
            return fields[1], cidr
    raise AssertionError(f"{vip} is not in {namespace}: {lines}")


def test_a_removed_vip_address_is_named_by_diagnose(
    world: NetnsWorld,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    api, scratch = world.api, world.scratch
    vip_subnet, member_subnet = world.vip_subnet, world.member_subnet
    lb = api.create_loadbalancer(vip_subnet.id, name=f"diag-{scratch.tag}")
    lb_id, vip = lb["id"], lb["vip_address"]
    assert ipaddress.ip_address(vip) in vip_subnet.network
    (amphora,) = api.amphorae(lb_id)
    scratch.amphora_ids.add(amphora["id"])
    namespace = namespace_name(amphora["id"])
    listener = api.create_listener(lb_id, "HTTP", LISTENER_PORT)
    pool = api.create_pool(lb_id, "HTTP", "ROUND_ROBIN", listener_id=listener["id"])
    address = member_subnet.address(200)
    member = api.create_member(
        lb_id, pool["id"], address, BACKEND_PORT, name="b1", subnet_id=member_subnet.id
    )
    backend_ns = scratch.plug(
        "b1", bridge_name(member_subnet.network_id), member_subnet.cidr_of(200)
    )
    scratch.serve_name(backend_ns, address, "backend-b1", tmp_path)
    api.create_healthmonitor(
        lb_id, pool["id"], type="HTTP", delay=1, timeout=1, max_retries=1, url_path="/"
    )
    wait_until(
        lambda: api.member(pool["id"], member["id"])["operating_status"] == "ONLINE",
        TIMEOUT,
        "member ONLINE",
    )
    wait_until(lambda: get_from_host(world, vip, LISTENER_PORT) == "backend-b1", TIMEOUT, "VIP")
    answers = f"agent probe from amphora {amphora['id']}: answers"

    def diagnosed(wanted: str) -> subprocess.CompletedProcess[str] | None:
        done = diagnose(world.serve, lb_id)
        return done if wanted in done.stdout else None

    well = wait_for_value(lambda: diagnosed(answers), TIMEOUT, "the agent's probe to answer")
    assert well.returncode == 0, well.stdout + well.stderr

    device, cidr = vip_device(namespace, vip)
    subprocess.run(["ip", "-n", namespace, "addr", "del", cidr, "dev", device], check=True)
    try:
        lost = f"agent probe from amphora {amphora['id']}: no answer"
        sick = wait_for_value(lambda: diagnosed(lost), TIMEOUT, "the agent's probe to fail")
        assert sick.returncode == 1, sick.stdout + sick.stderr
        assert "verdict: broken at the vip hop" in sick.stdout, sick.stdout
        assert "its members are healthy" in sick.stdout
        assert f"[  ok] members   member {member['id']}" in sick.stdout, sick.stdout
        assert api.member(pool["id"], member["id"])["operating_status"] == "ONLINE"
    finally:
        subprocess.run(["ip", "-n", namespace, "addr", "add", cidr, "dev", device], check=False)
