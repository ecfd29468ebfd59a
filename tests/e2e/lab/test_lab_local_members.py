"""A distributed load balancer whose flavor prefers members on the client's own host.

``lbaas lab up --hosts 2``: both hosts' agents are enrolled and carry every distributed
load balancer. Each host serves one member on a second address of its member-network
link (its own address is the host's, reserved), and a port bound to that host
(``binding:host_id``, as Nova binds an instance's port) holds that address. With
a flavor of ``{"prefer_local_members": true}``, a client on h1 is balanced on h1 to h1's
member only and a client on h2 to h2's; without the flavor both spread over both. When
h1's member stops, its health monitor takes it out on h1 and h1's clients reach h2's
member. h2's port is bound only once the load balancer is ACTIVE: until then h2's
clients spread, and the status poll brings the binding to h2's node without any change of
the load balancer. Everything goes through the API (ports, flavor, load balancer) and
real curl.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lab_api import V2, LabApi, lab_api_when_up
from provider_tier import lab_up
from test_lab_services import MEMBER_PORT, curl, serve_member

from lbaas.lab.lab import Lab
from lbaas.lab.services import network_id
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow]

REQUESTS = 20


def _control_plane_story(lab: Lab, lb_id: str) -> str:
    """What the health and worker processes logged about ``lb_id`` (a timeout's evidence:
    whether the poll saw the binding move, and whether a converge followed)."""
    lines = []
    for part in ("health", "worker"):
        log = lab.services_dir / "ctl" / f"{part}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        lines += [f"{part}: {line}" for line in text.splitlines() if lb_id in line][-15:]
    return "\n".join(lines) or "(no control-plane line names the load balancer)"


def _load_balancer(api: LabApi, services: dict[str, Any], members: dict[str, str],
                   flavor: str | None) -> tuple[str, str]:  # fmt: skip
    """A TCP listener on port 80 over both hosts' members, with a TCP monitor: (id, VIP)."""
    body: dict[str, Any] = {"vip_subnet_id": services["vip_subnet_id"], "provider": "distributed"}
    if flavor is not None:
        body["flavor_id"] = flavor
    created = api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})["loadbalancer"]
    lb_id, vip = str(created["id"]), str(created["vip_address"])
    api.wait_active(lb_id)
    listener = api.create(
        lb_id, "listeners", {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": 80}
    )
    pool = api.create(
        lb_id, "pools",
        {"listener_id": listener, "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
    )  # fmt: skip
    monitor = {"pool_id": pool, "type": "TCP", "delay": 1, "timeout": 1, "max_retries": 1,
               "max_retries_down": 1}  # fmt: skip
    api.create(lb_id, "healthmonitors", monitor)
    subnet = services["member_subnet_ids"]["m0"]
    for address in members.values():
        member = {"address": address, "protocol_port": MEMBER_PORT, "subnet_id": subnet}
        api.create(lb_id, f"pools/{pool}/members", member)
    return lb_id, vip


def _serve_member(lab: Lab, host: int, root: Path, started: list[subprocess.Popen[bytes]]) -> str:
    """An HTTP server on a new address of ``host``'s member-network link, naming the host."""
    own = ipaddress.ip_interface(lab.status()["hosts"][f"h{host}"]["addresses"]["m0"])
    address = str(own.network.network_address + 200 + host)
    namespace = lab.names.host(host)
    links = json.loads(subprocess.run(["ip", "-n", namespace, "-j", "addr"], capture_output=True,
                                      text=True, check=True).stdout)  # fmt: skip
    (link,) = [i["ifname"] for i in links for a in i["addr_info"] if a["local"] == str(own.ip)]
    subprocess.run(["ip", "-n", namespace, "addr", "add", f"{address}/{own.network.prefixlen}",
                    "dev", link], check=True)  # fmt: skip
    return serve_member(lab, f"h{host}", root, started, address)


def _answers(lab: Lab, host: int, vip: str) -> Counter[str | None]:
    """Which host's member answered each of ``REQUESTS`` new connections from ``host``."""
    return Counter(curl(lab.names.host(host), f"http://{vip}:80/") for _ in range(REQUESTS))


def test_each_hosts_clients_stay_on_its_own_member_while_it_is_healthy(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    with lab_up(lab_dir, "l", "--hosts", "2") as (lab, _base):
        services, api = lab_api_when_up(lab, 2)
        members = {f"h{i}": _serve_member(lab, i, lab_dir, sleepers) for i in (1, 2)}
        ports: dict[str, str] = {}
        for host, address in members.items():  # h1's member port is bound to h1, h2's not yet
            port: dict[str, Any] = {"network_id": network_id(lab.names.lab, "m0"), "fixed_ips": [
                {"ip_address": address}], "device_owner": "compute:nova"}  # fmt: skip
            if host == "h1":
                port["binding:host_id"] = host
            ports[host] = api.call("POST", "/v2.0/ports", {"port": port})["port"]["id"]
        data = json.dumps({"prefer_local_members": True})
        profile = api.call("POST", f"{V2}/flavorprofiles", {"flavorprofile": {
            "name": "local", "provider_name": "distributed", "flavor_data": data}})  # fmt: skip
        flavor = api.call("POST", f"{V2}/flavors", {"flavor": {
            "name": "local", "flavor_profile_id": profile["flavorprofile"]["id"]}})  # fmt: skip

        _, spread_vip = _load_balancer(api, services, members, None)
        lb_id, vip = _load_balancer(api, services, members, flavor["flavor"]["id"])
        served = {i: f"served by h{i}\n" for i in (1, 2)}
        wait_until(lambda: len(_answers(lab, 2, vip)) == 2, timeout=30,
                   what="h2's clients spread: no member is bound to h2 yet")  # fmt: skip
        # Nova binds h2's instance port: no write touches the load balancer.
        api.call("PUT", f"/v2.0/ports/{ports['h2']}", {"port": {"binding:host_id": "h2"}})
        for i in (1, 2):  # every new connection: one served by h2 may be chance
            try:  # the poll (2 s) notices, then a converge once settled 5 s
                wait_until(lambda i=i: _answers(lab, i, vip) == Counter({served[i]: REQUESTS}),
                           timeout=30, what=f"h{i}'s clients served by h{i} only")  # fmt: skip
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{_control_plane_story(lab, lb_id)}") from None
        # Without the flavor the same members are balanced across hosts.
        wait_until(lambda: len(_answers(lab, 1, spread_vip)) == 2, timeout=30,
                   what="the unflavored VIP spreading h1's clients over both members")  # fmt: skip

        sleepers[0].kill()  # h1's member stops: h1's monitor takes it out on h1
        wait_until(lambda: _answers(lab, 1, vip) == Counter({served[2]: REQUESTS}), timeout=30,
                   what="h1's clients served by h2's member")  # fmt: skip
        assert _answers(lab, 2, vip) == Counter({served[2]: REQUESTS})
        api.call("DELETE", f"{V2}/loadbalancers/{lb_id}?cascade=true")
