"""The stock ``openstack`` CLI with password auth against ``lbaas serve`` through a real
Keystone, lbaas found in the service catalog (registered by the commands of
docs/operations.md, run as written): two projects and Octavia's personas. A member of
project A cannot see, change or use anything of project B (load balancers, secrets,
ports, quotas); an observer cannot write; a global observer reads everything and writes
nothing; a quota admin sets quotas; an application credential works too; a policy file
that denies one rule takes effect.

CLI calls cost seconds each, so the checks that need no client of their own (ports, a
quota read) use the same users' real tokens over HTTP."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.amphora.openstack_cli import openstack_executable
from tests.e2e.conftest import Served
from tests.e2e.keystone.conftest import serve_with_keystone
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.keystone_server import KeystoneServer
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
ROOT = Path(__file__).resolve().parents[3]
LBS = "/v2/lbaas/loadbalancers"
PASSWORD = "persona-password"
PERSONAS = {
    "a-member": ("proj-a", "load-balancer_member"),
    "b-member": ("proj-b", "load-balancer_member"),
    "a-observer": ("proj-a", "load-balancer_observer"),
    "global-observer": ("proj-a", "load-balancer_global_observer"),
    "quota-admin": ("proj-a", "load-balancer_quota_admin"),
}


def catalog_commands(marker: str) -> str:
    """The sh block under ``<!-- marker`` in docs/operations.md."""
    text = (ROOT / "docs" / "operations.md").read_text()
    found = re.search(rf"<!-- {marker}:.*?-->\s*```sh\n(.*?)```", text, re.S)
    assert found, f"docs/operations.md lost its {marker}"
    return re.sub(r"^ {3}", "", found.group(1), flags=re.M)


@dataclass
class World:
    lbaas: Served
    keystone: KeystoneServer
    policy: Path

    def cli(self, user: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        env = self.keystone.cli_env(user, PASSWORD, PERSONAS[user][0])
        return _run(env, args, ok)

    def json(self, user: str, *args: str) -> Any:
        return json.loads(self.cli(user, *args, "-f", "json").stdout)

    def http(self, user: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        token = self.keystone.token(user, PASSWORD, PERSONAS[user][0])
        headers = {"X-Auth-Token": token}
        return httpx.request(method, self.lbaas.url + path, headers=headers, timeout=30, **kwargs)


def _run(env: dict[str, str], args: tuple[str, ...], ok: bool) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [openstack_executable(), *args], env=env, capture_output=True, text=True, timeout=180
    )
    assert (done.returncode == 0) == ok, f"openstack {' '.join(args)}: {done.stderr}"
    return done


@pytest.fixture(scope="module")
def world(keystone: KeystoneServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("personas")
    policy = tmp / "policy.yaml"
    policy.write_text("{}\n")
    for user, (project, role) in PERSONAS.items():
        keystone.user(user, PASSWORD, project, (role,))
    api = {"policy_file": str(policy)}
    for lbaas in serve_with_keystone(tmp, keystone, "lbaas-personas", api, token_cache_time=60.0):
        admin = keystone.cli_env("admin", keystone.admin_password, "admin")
        subprocess.run(
            ["bash", "-euc", catalog_commands("catalog-commands")],
            env={**admin, "LBAAS_URL": lbaas.url},
            check=True,
            capture_output=True,
            timeout=600,
        )
        subprocess.run(
            ["bash", "-euc", catalog_commands("catalog-network-commands")],
            env={**admin, "LBAAS_URL": lbaas.url},
            check=True,
            capture_output=True,
            timeout=600,
        )
        world = World(lbaas, keystone, policy)
        # Project A's load balancer and secret, made through the catalog with a password.
        world.cli(
            "a-member",
            "loadbalancer",
            "create",
            "--name",
            "a-lb",
            "--vip-subnet-id",
            LOOPBACK_SUBNET,
            "--wait",
        )
        world.cli("a-member", "secret", "store", "--name", "a-secret", "--payload", "a-payload")
        made = world.http(
            "b-member",
            "POST",
            LBS,
            json={"loadbalancer": {"name": "b-lb", "vip_subnet_id": LOOPBACK_SUBNET}},
        )
        assert made.status_code == 201, made.text
        yield world


def _names(listed: list[dict[str, Any]]) -> set[str]:
    return {str(x.get("name") or x.get("Name")) for x in listed}


def test_a_member_of_b_cannot_see_change_or_use_a(world: World) -> None:
    a_lb = world.json("a-member", "loadbalancer", "show", "a-lb")
    a_secret = world.json("a-member", "secret", "list", "--name", "a-secret")
    assert len(a_secret) == 1
    href = a_secret[0]["Secret href"]
    # Load balancers: not listed, not shown, not renamed, not extended with a listener.
    assert _names(world.json("b-member", "loadbalancer", "list")) == {"b-lb"}
    world.cli("b-member", "loadbalancer", "show", a_lb["id"], ok=False)
    world.cli("b-member", "loadbalancer", "set", "--name", "taken", a_lb["id"], ok=False)
    listener = {
        "listener": {"protocol": "HTTP", "protocol_port": 80, "loadbalancer_id": a_lb["id"]}
    }
    assert world.http("b-member", "POST", "/v2/lbaas/listeners", json=listener).status_code in (
        403,
        404,
    )
    # Secrets: not listed, not read.
    assert world.json("b-member", "secret", "list") == []
    world.cli("b-member", "secret", "get", "--payload", href, ok=False)
    # Ports: A's VIP port is neither listed nor shown to B, nor usable as B's VIP.
    port = a_lb["vip_port_id"]
    ports = world.http("b-member", "GET", "/v2.0/ports").json()["ports"]
    assert port not in {p["id"] for p in ports}
    shown = world.http("b-member", "GET", f"/v2.0/ports/{port}")
    # 403 (lbaas, as Octavia for its objects) where Neutron says 404: no content either way.
    assert shown.status_code in (403, 404) and "port" not in shown.json()
    steal = {"loadbalancer": {"vip_port_id": port}}
    assert world.http("b-member", "POST", LBS, json=steal).status_code in (400, 403, 404)
    # Quotas: A's are not B's to read or set.
    a_project = world.keystone.project("proj-a")
    assert world.http("b-member", "GET", f"/v2/lbaas/quotas/{a_project}").status_code == 403
    quota = {"quota": {"load_balancer": 1}}
    put = world.http("b-member", "PUT", f"/v2/lbaas/quotas/{a_project}", json=quota)
    assert put.status_code == 403
    # Nothing of A changed.
    assert world.json("a-member", "loadbalancer", "show", "a-lb")["name"] == "a-lb"


def test_an_observer_reads_and_cannot_write(world: World) -> None:
    assert "a-lb" in _names(world.json("a-observer", "loadbalancer", "list"))
    refused = world.cli("a-observer", "loadbalancer", "set", "--description", "x", "a-lb", ok=False)
    assert "403" in refused.stderr or "Policy does not allow" in refused.stderr


def test_a_global_observer_reads_everything_and_writes_nothing(world: World) -> None:
    assert _names(world.json("global-observer", "loadbalancer", "list")) >= {"a-lb", "b-lb"}
    b_lb = world.http("b-member", "GET", LBS).json()["loadbalancers"][0]["id"]
    world.cli("global-observer", "loadbalancer", "delete", b_lb, ok=False)
    assert world.http("b-member", "GET", f"{LBS}/{b_lb}").status_code == 200


def test_a_quota_admin_sets_quotas_a_member_does_not(world: World) -> None:
    a_project = world.keystone.project("proj-a")
    world.cli("quota-admin", "loadbalancer", "quota", "set", "--loadbalancer", "7", a_project)
    shown = world.http("a-member", "GET", f"/v2/lbaas/quotas/{a_project}").json()["quota"]
    assert shown["load_balancer"] == 7
    quota = {"quota": {"load_balancer": 100}}
    put = world.http("a-member", "PUT", f"/v2/lbaas/quotas/{a_project}", json=quota)
    assert put.status_code == 403


def test_an_application_credential_finds_lbaas_in_the_catalog(world: World) -> None:
    credential = world.keystone.application_credential("a-member", PASSWORD, "proj-a", "ci")
    env = world.keystone.cli_env_application_credential(credential)
    listed = json.loads(_run(env, ("loadbalancer", "list", "-f", "json"), True).stdout)
    assert _names(listed) == {"a-lb"}
    secrets = json.loads(_run(env, ("secret", "list", "-f", "json"), True).stdout)
    assert [s["Name"] for s in secrets] == ["a-secret"]


def test_a_policy_file_denying_one_rule_takes_effect(world: World) -> None:
    a_lb = world.json("a-member", "loadbalancer", "show", "a-lb")["id"]
    world.policy.write_text('"os_load-balancer_api:loadbalancer:get_all": "!"\n')
    try:
        refused = world.cli("a-member", "loadbalancer", "list", ok=False)
        assert "403" in refused.stderr or "Policy does not allow" in refused.stderr
        # Only that rule: showing one load balancer by id is still allowed (not through the
        # CLI, which lists to resolve any name or id it is given).
        assert world.http("a-member", "GET", f"{LBS}/{a_lb}").status_code == 200
    finally:
        world.policy.write_text("{}\n")

    def listed_again() -> bool:
        return world.http("a-member", "GET", LBS).status_code == 200

    wait_until(listed_again, 10, "the relaxed policy file")
