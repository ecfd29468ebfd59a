"""The issue-2 workflow driven by the unmodified ``openstack`` CLI against ``lbaas serve``.

Every step waits for the load balancer to be ACTIVE again, as a user would.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from tests.e2e.amphora.openstack_cli import openstack_executable
from tests.e2e.conftest import Served

pytestmark = [pytest.mark.slow]
LOOPBACK_SUBNET = "7f000a00-0000-4000-8000-000000000001"


class Cli:
    def __init__(self, url: str) -> None:
        self.base = [openstack_executable(), "--os-auth-type", "none", "--os-endpoint", url]

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-f", "json"))

    def wait_active(self, lb: str) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shown = self.json("loadbalancer", "show", lb)
            if shown["provisioning_status"] == "ACTIVE":
                return dict(shown)
            time.sleep(0.2)
        raise AssertionError(f"{lb} not ACTIVE")


def run_workflow(cli: Cli) -> None:
    lb = cli.json("loadbalancer", "create", "--name", "web", "--vip-subnet-id", LOOPBACK_SUBNET)
    assert lb["provisioning_status"] == "PENDING_CREATE"
    cli.wait_active("web")
    listener = cli.json(
        "loadbalancer",
        "listener",
        "create",
        "--name",
        "http",
        "--protocol",
        "HTTP",
        "--protocol-port",
        "8080",
        "web",
    )
    cli.wait_active("web")
    pool = cli.json(
        "loadbalancer",
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
    cli.wait_active("web")
    member = cli.json(
        "loadbalancer",
        "member",
        "create",
        "--name",
        "m1",
        "--address",
        "192.168.1.14",
        "--protocol-port",
        "80",
        "pool1",
    )
    assert member["address"] == "192.168.1.14"
    cli.wait_active("web")
    cli.json(
        "loadbalancer",
        "healthmonitor",
        "create",
        "--name",
        "hm1",
        "--delay",
        "5",
        "--timeout",
        "3",
        "--max-retries",
        "3",
        "--type",
        "HTTP",
        "pool1",
    )
    cli.wait_active("web")
    shared = cli.json(
        "loadbalancer",
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
    cli.wait_active("web")
    policy = cli.json(
        "loadbalancer",
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
    cli.wait_active("web")
    rule = cli.json(
        "loadbalancer",
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
    cli.wait_active("web")
    status = json.loads(cli.run("loadbalancer", "status", "show", "web"))
    tree = status["loadbalancer"]
    assert tree["listeners"][0]["id"] == listener["id"]
    assert {p["id"] for p in tree["listeners"][0]["pools"]} == {pool["id"], shared["id"]}
    stats = cli.json("loadbalancer", "stats", "show", "web")
    assert stats["total_connections"] == 0
    cli.run("loadbalancer", "set", "--name", "web2", "web")
    renamed = cli.wait_active("web2")
    assert renamed["id"] == lb["id"]
    assert policy["redirect_pool_id"] == shared["id"]
    cli.run("loadbalancer", "delete", "--cascade", "web2")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listing = cli.json("loadbalancer", "list")
        if not listing:
            return
        time.sleep(0.2)
    raise AssertionError("load balancer not deleted")


def test_workflow_with_openstack_cli(noop_server: Served) -> None:
    run_workflow(Cli(noop_server.url))
