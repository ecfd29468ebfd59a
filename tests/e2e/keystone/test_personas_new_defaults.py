"""The personas again under ``enforce_new_defaults = true``: Keystone's own ``reader``,
``member``, ``manager`` and ``admin`` roles on project-scoped tokens, as Octavia's new
defaults read them (lbaas/identity/base_rules.py). A project reader reads its project
only and writes nothing; a member (and a manager, a member by Keystone's role
implication) writes its own project only and sets no quota; an admin reads and writes
every project. Octavia's deprecated ``load-balancer_*`` roles and a system-scoped token
get nothing.

Same Keystone as tests/e2e/keystone/test_personas.py (the session's), its own
``lbaas serve`` in a region of its own (so the stock ``openstack`` CLI finds this lbaas
and not the other module's), and its own users and projects. CLI calls cost seconds
each: the CLI reads and writes the load balancers, plain HTTP with the same users' tokens
does the rest."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.e2e.amphora.openstack_cli import openstack_executable
from tests.e2e.conftest import Served
from tests.e2e.keystone.conftest import serve_with_keystone
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.keystone_server import KeystoneServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
LBS = "/v2/lbaas/loadbalancers"
REGION = "RegionNewDefaults"
PASSWORD = "new-defaults-password"
#: user -> (project, role); None: a system-scoped role.
PERSONAS: dict[str, tuple[str | None, str]] = {
    "nd-a-reader": ("nd-a", "reader"),
    "nd-a-member": ("nd-a", "member"),
    "nd-a-manager": ("nd-a", "manager"),
    "nd-b-member": ("nd-b", "member"),
    "nd-a-admin": ("nd-a", "admin"),
    "nd-a-old-member": ("nd-a", "load-balancer_member"),
    "nd-system-reader": (None, "reader"),
}


@dataclass
class World:
    lbaas: Served
    keystone: KeystoneServer
    lb: dict[str, str]  # project name -> its load balancer's id

    def cli(self, user: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        project = PERSONAS[user][0]
        assert project is not None
        env = self.keystone.cli_env(user, PASSWORD, project, REGION)
        done = subprocess.run(
            [openstack_executable(), *args], env=env, capture_output=True, text=True, timeout=180
        )
        assert (done.returncode == 0) == ok, f"openstack {' '.join(args)}: {done.stderr}"
        return done

    def listed(self, user: str) -> set[str]:
        rows = json.loads(self.cli(user, "loadbalancer", "list", "-f", "json").stdout)
        return {str(row["name"]) for row in rows}

    def http(self, user: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        token = self.keystone.token(user, PASSWORD, PERSONAS[user][0])
        headers = {"X-Auth-Token": token}
        return httpx.request(method, self.lbaas.url + path, headers=headers, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def world(keystone: KeystoneServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("new-defaults")
    for user, (project, role) in PERSONAS.items():
        keystone.user(user, PASSWORD, project, (role,))
    api = {"enforce_new_defaults": True}
    for lbaas in serve_with_keystone(tmp, keystone, "lbaas-new-defaults", api):
        keystone.register_service("load-balancer", "lbaas-nd", lbaas.url, REGION)
        keystone.register_service("network", "lbaas-nd-network", lbaas.url, REGION)
        world = World(lbaas, keystone, {})
        world.cli(
            "nd-a-member",
            *("loadbalancer", "create", "--name", "nd-a-lb"),
            *("--vip-subnet-id", LOOPBACK_SUBNET, "--wait"),
        )
        world.lb["nd-a"] = world.http("nd-a-member", "GET", LBS).json()["loadbalancers"][0]["id"]
        body = {"loadbalancer": {"name": "nd-b-lb", "vip_subnet_id": LOOPBACK_SUBNET}}
        made = world.http("nd-b-member", "POST", LBS, json=body)
        assert made.status_code == 201, made.text
        world.lb["nd-b"] = made.json()["loadbalancer"]["id"]
        yield world


def _description(world: World, user: str, project: str, text: str) -> int:
    body = {"loadbalancer": {"description": text}}
    return world.http(user, "PUT", f"{LBS}/{world.lb[project]}", json=body).status_code


def _quota(world: World, user: str, project: str) -> int:
    path = f"/v2/lbaas/quotas/{world.keystone.project(project)}"
    return world.http(user, "PUT", path, json={"quota": {"load_balancer": 9}}).status_code


def test_a_project_reader_reads_its_project_only_and_writes_nothing(world: World) -> None:
    assert world.listed("nd-a-reader") == {"nd-a-lb"}
    refused = world.cli(
        "nd-a-reader", "loadbalancer", "set", "--description", "x", "nd-a-lb", ok=False
    )
    assert "403" in refused.stderr or "Policy does not allow" in refused.stderr
    assert world.http("nd-a-reader", "GET", f"{LBS}/{world.lb['nd-b']}").status_code == 403


def test_a_member_writes_its_own_project_only(world: World) -> None:
    assert world.listed("nd-b-member") == {"nd-b-lb"}
    assert world.http("nd-b-member", "GET", f"{LBS}/{world.lb['nd-a']}").status_code == 403
    assert _description(world, "nd-b-member", "nd-a", "taken") == 403
    assert _quota(world, "nd-b-member", "nd-b") == 403  # quotas are the admin's
    # A manager is a member by Keystone's implied roles: the same rights, no more.
    manager = world.http("nd-a-manager", "GET", LBS).json()["loadbalancers"]
    assert [lb["name"] for lb in manager] == ["nd-a-lb"]
    assert _description(world, "nd-a-manager", "nd-b", "taken") == 403
    assert _quota(world, "nd-a-manager", "nd-a") == 403
    assert _description(world, "nd-a-manager", "nd-a", "by the manager") == 200


def test_an_admin_reads_and_writes_every_project(world: World) -> None:
    assert world.listed("nd-a-admin") >= {"nd-a-lb", "nd-b-lb"}
    shown = world.http("nd-a-admin", "GET", f"{LBS}/{world.lb['nd-b']}")
    assert shown.status_code == 200 and shown.json()["loadbalancer"]["name"] == "nd-b-lb"
    assert _description(world, "nd-a-admin", "nd-b", "by the admin") == 200
    assert _quota(world, "nd-a-admin", "nd-b") == 202


def test_the_old_roles_and_a_system_scope_get_nothing(world: World) -> None:
    assert world.http("nd-a-old-member", "GET", LBS).status_code == 403
    assert world.http("nd-a-old-member", "GET", f"{LBS}/{world.lb['nd-a']}").status_code == 403
    assert world.http("nd-system-reader", "GET", LBS).status_code == 403
