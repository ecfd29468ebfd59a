"""The issue-2 workflow through the ``openstack`` CLI, now carrying real traffic.

Same steps as ``tests/e2e/test_openstack_cli.py`` (load balancer, listener, pool, members,
health monitor, shared pool, L7 policy and rule, status, stats, rename, cascade delete) with
the amphora provider and members that are real servers on loopback; after each step that
changes what the VIP does, requests through the VIP show it.

Each change is made with the CLI; waiting for ACTIVE polls the API (the CLI's ``--wait``
sleeps three seconds between polls, and every CLI start costs seconds too).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.openstack_cli import OpenstackCli
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.e2e.amphora.traffic import request, served_by, spread, wait_for_backends
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

LB_NAMES = ("web", "web2")


@pytest.fixture
def cli(serve: ServeInstance, api: OctaviaApi) -> Iterator[OpenstackCli]:
    try:
        yield OpenstackCli(serve.url)
    finally:
        for lb in api.get("/v2/lbaas/loadbalancers")["loadbalancers"]:
            if lb["name"] in LB_NAMES:
                api.delete_loadbalancer(lb["id"])


class Workflow:
    """CLI changes to one load balancer, each followed by waiting for it to be ACTIVE."""

    def __init__(self, cli: OpenstackCli, api: OctaviaApi) -> None:
        self.cli, self.api = cli, api
        self.lb_id = ""

    def create_loadbalancer(self, name: str) -> dict[str, Any]:
        lb: dict[str, Any] = self.cli.json(
            "loadbalancer", "create", "--name", name, "--vip-subnet-id", LOOPBACK_SUBNET_ID
        )
        self.lb_id = lb["id"]
        self.api.wait_active(self.lb_id)
        return lb

    def change(self, *args: str) -> dict[str, Any]:
        made: dict[str, Any] = self.cli.json("loadbalancer", *args)
        self.api.wait_active(self.lb_id)
        return made


def refused(vip: str, port: int) -> bool:
    try:
        request(vip, port, timeout=2)
    except (OSError, http.client.HTTPException):
        return True
    return False


def member_statuses(api: OctaviaApi, pool_id: str) -> set[str]:
    members = api.get(f"/v2/lbaas/pools/{pool_id}/members")["members"]
    return {m["operating_status"] for m in members}


def test_workflow_with_openstack_cli_carries_traffic(
    cli: OpenstackCli, api: OctaviaApi, backends: BackendFleet
) -> None:
    one, two, three = backends.http("one", "two", "three")
    flow = Workflow(cli, api)
    lb = flow.create_loadbalancer("web")
    vip = lb["vip_address"]
    port = free_port_on(vip)
    assert refused(vip, port), "nothing listens before a listener exists"

    flow.change(
        "listener",
        "create",
        "--name",
        "http",
        "--protocol",
        "HTTP",
        "--protocol-port",
        str(port),
        "web",
    )
    # An HTTP listener without a pool answers 503.
    wait_until(lambda: not refused(vip, port), 30, "the listener to accept connections")
    assert request(vip, port).status == 503

    pool = flow.change(
        "pool",
        "create",
        "--name",
        "pool1",
        "--lb-algorithm",
        "ROUND_ROBIN",
        "--listener",
        "http",
        "--protocol",
        "HTTP",
    )
    assert request(vip, port).status == 503, "a pool without members has nobody to ask"

    member = flow.change(
        "member",
        "create",
        "--name",
        "m1",
        "--address",
        one.address,
        "--protocol-port",
        str(one.port),
        "pool1",
    )
    assert member["address"] == "127.0.0.1"
    assert spread(vip, port, 10) == {"one": 10}

    flow.change(
        "member",
        "create",
        "--name",
        "m2",
        "--address",
        two.address,
        "--protocol-port",
        str(two.port),
        "pool1",
    )
    counts = spread(vip, port, 100)
    assert 45 <= counts["one"] <= 55 and counts["one"] + counts["two"] == 100, counts

    flow.change(
        "healthmonitor",
        "create",
        "--name",
        "hm1",
        "--delay",
        "1",
        "--timeout",
        "1",
        "--max-retries",
        "1",
        "--type",
        "HTTP",
        "--url-path",
        "/",
        "pool1",
    )
    wait_until(lambda: member_statuses(api, pool["id"]) == {"ONLINE"}, 30, "members ONLINE")
    wait_for_backends(vip, port, {"one", "two"})

    shared = flow.change(
        "pool",
        "create",
        "--name",
        "shared",
        "--lb-algorithm",
        "ROUND_ROBIN",
        "--loadbalancer",
        "web",
        "--protocol",
        "HTTP",
    )
    flow.change(
        "member", "create", "--address", three.address, "--protocol-port", str(three.port), "shared"
    )
    policy = flow.change(
        "l7policy",
        "create",
        "--name",
        "to-shared",
        "--action",
        "REDIRECT_TO_POOL",
        "--redirect-pool",
        "shared",
        "http",
    )
    assert policy["redirect_pool_id"] == shared["id"]
    rule = flow.change(
        "l7rule",
        "create",
        "--type",
        "HOST_NAME",
        "--compare-type",
        "STARTS_WITH",
        "--value",
        "server",
        "to-shared",
    )
    assert rule["value"] == "server"
    assert served_by(vip, port, headers={"Host": "server.example.com"}) == "three"
    assert set(spread(vip, port, 20)) == {"one", "two"}

    # ``status show`` prints JSON of its own and takes no -f.
    tree = json.loads(cli.run("loadbalancer", "status", "show", "web"))["loadbalancer"]
    assert tree["provisioning_status"] == "ACTIVE"
    assert {p["name"] for p in tree["listeners"][0]["pools"]} == {"pool1", "shared"}

    # 131 requests reached the pools so far (plus the 503s and the waits).
    wait_until(
        lambda: api.loadbalancer_stats(lb["id"])["total_connections"] >= 131,
        60,
        "stats to count the requests sent",
    )
    stats = cli.json("loadbalancer", "stats", "show", "web")
    assert stats["total_connections"] >= 131, stats
    assert stats["bytes_in"] > 0 and stats["bytes_out"] > 0

    cli.run("loadbalancer", "set", "--name", "web2", "web")
    renamed = api.wait_active(lb["id"])
    assert renamed["name"] == "web2"
    assert set(spread(vip, port, 10)) == {"one", "two"}

    amphorae = cli.json("loadbalancer", "amphora", "list", "--loadbalancer", lb["id"])
    assert len(amphorae) == 1 and amphorae[0]["status"] != "ERROR", amphorae

    cli.run("loadbalancer", "delete", "--cascade", "web2")
    wait_until(
        lambda: api.http.get(f"/v2/lbaas/loadbalancers/{lb['id']}").status_code == 404,
        60,
        "the load balancer to be deleted",
    )
    wait_until(lambda: refused(vip, port), 30, "the VIP to stop answering")
