"""Issue 33's ``--provider lbaas-distributed`` through a real Octavia, in the lab.

``lbaas lab up --hosts 2``: lbaas's control plane in ``<lab>-ctl`` (noauth inside the lab's
own network), a node agent on h1 and h2, each carrying every distributed load balancer.
Octavia's API and driver agent run on the machine (``tests/support/octavia_service.py``)
and drive the lab's API through a port forwarded into ``<lab>-ctl``; the stock
``openstack`` CLI builds a TCP load balancer, a SOURCE_IP_PORT pool, a TCP monitor and two
members, HTTP servers on h1's and h2's member-network addresses. New connections from the
lab's client namespace (behind the router, on no node: it enters through the node the hash
chose) and from each host (balanced on that host) reach both members; Octavia's
``stats show`` counts them; h2's member killed is ERROR or OFFLINE in Octavia's
``status show`` within 10 s and leaves rotation; a cascade delete leaves nothing in either
API and nothing of the load balancer in either host's nftables table.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lab_api import lab_api_when_up
from provider_tier import lab_up
from test_lab_services import MEMBER_PORT, curl, serve_member

from lbaas.l4 import nft
from lbaas.l4.host.real import RealNftOps
from lbaas.lab.lab import Lab
from lbaas.lab.services import API_PORT
from tests.e2e.octavia.both_sides import gone, member_status, nothing_left
from tests.e2e.octavia.conftest import octavia_for
from tests.e2e.octavia.tcp_build import PORT, build_tcp, seconds_to_down
from tests.support.netns_port import forwarded_port
from tests.support.openstack_venv import openstack_command
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow]

HOSTS = (1, 2)
REQUESTS = 12
OCTAVIA = ("octavia-db-manage", "octavia-api", "octavia-driver-agent", "openstack")


def _needs_octavia() -> None:
    if os.geteuid() != 0:
        pytest.skip("the lab's namespaces need root")
    try:
        for name in OCTAVIA:
            openstack_command(name)
    except RuntimeError as missing:
        pytest.skip(str(missing))
    if shutil.which("mysql") is None:
        pytest.skip("Octavia's database is the machine's MariaDB, through the mysql client")


def _answers(namespace: str, vip: str) -> set[str | None]:
    """Who answered each of ``REQUESTS`` new connections to the VIP from ``namespace``."""
    return {curl(namespace, f"http://{vip}:{PORT}/") for _ in range(REQUESTS)}


def _holding(lab: Lab, lb_id: str) -> list[int]:
    """The hosts whose L4 table still names the load balancer (its chain or maps)."""
    key = nft.lb_key(lb_id)
    tables = {i: RealNftOps(lab.names.host(i)).list_table(nft.TABLE) or "" for i in HOSTS}
    return [i for i, text in tables.items() if key in text]


def test_octavias_cli_builds_a_distributed_tcp_load_balancer_served_by_the_labs_hosts(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    _needs_octavia()
    with lab_up(lab_dir, "o", "--hosts", "2") as (lab, _base):
        services, _api = lab_api_when_up(lab, len(HOSTS))
        members = [serve_member(lab, f"h{i}", lab_dir, sleepers) for i in HOSTS]
        vip = str(ipaddress.ip_network(lab.status()["networks"]["vip"])[100])
        with (
            forwarded_port(lab.names.control, API_PORT) as port,
            octavia_for(f"http://127.0.0.1:{port}") as front,
        ):
            subnet = services["member_subnet_ids"]["m0"]
            pairs = [(address, MEMBER_PORT) for address in members]
            lb = build_tcp(front.cli, services["vip_subnet_id"], vip, pairs, subnet)
            lb_id = lb["id"]
            shown = front.lbaas_api.get(f"/v2/lbaas/loadbalancers/{lb_id}").json()
            assert shown["loadbalancer"]["provider"] == "distributed"
            wait_until(
                lambda: set(member_status(front, lb_id, "address").values()) == {"ONLINE"},
                30,
                "both members ONLINE in Octavia",
            )
            assert _holding(lab, lb_id) == list(HOSTS)

            both = {f"served by h{i}\n" for i in HOSTS}
            clients = [lab.names.client, *(lab.names.host(i) for i in HOSTS)]
            for namespace in clients:
                assert _answers(namespace, vip) == both, namespace

            def counted() -> bool:
                stats = front.octavia_api.get(f"/v2/lbaas/loadbalancers/{lb_id}/stats").json()
                return int(stats["stats"]["total_connections"]) >= len(clients) * REQUESTS

            wait_until(counted, 30, "Octavia's stats to count every connection")
            stats = front.cli.json("loadbalancer", "stats", "show", lb_id)
            assert stats["total_connections"] >= len(clients) * REQUESTS, stats

            took = seconds_to_down(front, lb_id, members[1], sleepers[1].kill)
            figures = {"member_down_in_octavia_s": round(took, 2), "connections_made":
                       len(clients) * REQUESTS, "octavia_total_connections": stats["total_connections"]}  # fmt: skip
            print(json.dumps(figures))
            for namespace in clients:
                wait_until(
                    lambda n=namespace: _answers(n, vip) == {"served by h1\n"},  # type: ignore[misc]
                    30,
                    f"new connections from {namespace} to h1's member only",
                )

            front.cli.run("loadbalancer", "delete", "--cascade", "--wait", lb_id)
            wait_until(lambda: gone(front, lb_id), 30, "the load balancer gone on both sides")
            nothing_left(front)
            wait_until(lambda: _holding(lab, lb_id) == [], 30, "the hosts' nftables emptied")
