"""Horizon's load-balancer panels (octavia-dashboard) against lbaas through Keystone.

A real Keystone (tests/support/keystone_server.py) has lbaas in its catalog as
``load-balancer``, ``network`` and ``compute`` (docs/api-compat.md says what the
dashboard asks of each); ``lbaas serve`` (noop provider) validates its tokens; Horizon from the OpenStack
environment has octavia-dashboard enabled. A project member logs in through Horizon's
form in Debian's Chromium, runs the create wizard (VIP on lbaas's loopback subnet, an HTTP
listener on 80, a ROUND_ROBIN pool with the project's two instances as members, an HTTP
monitor) and sees the load balancer ACTIVE in the table, then its listener, pool, members
and monitor in the detail pages. ``LBAAS_UPDATE_SCREENSHOTS=1`` writes docs/horizon.png.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Served
from tests.e2e.keystone.conftest import serve_with_keystone
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.browser import chromium
from tests.support.horizon_server import HorizonServer, horizon_server
from tests.support.keystone_server import KeystoneServer, keystone_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
USER, PASSWORD, PROJECT = "horizon-alice", "horizon-alice-pw", "horizon-demo"
#: Two instances of the project, as lbaas knows them: a compute port each.
INSTANCES = {"web-1": "127.0.10.31", "web-2": "127.0.10.32"}
LB_NAME = "web-lb"
#: Horizon's pages answer in seconds on the loaded machine; its first ones in tens.
TIMEOUT_MS = 120_000


@dataclass
class Cloud:
    keystone: KeystoneServer
    lbaas: Served
    horizon: HorizonServer

    def token(self) -> dict[str, str]:
        return {"X-Auth-Token": self.keystone.token(USER, PASSWORD, PROJECT)}


def _instances(lbaas: Served, headers: dict[str, str]) -> None:
    """The instances' ports, recorded as Nova records them (``compute:`` owner)."""
    # 30 s, not httpx's 5: the first call validates the token at Keystone (lbaas's service
    # user logs in first), seconds each on the loaded machine.
    subnet = httpx.get(f"{lbaas.url}/v2.0/subnets/{LOOPBACK_SUBNET}", headers=headers, timeout=30)
    network = subnet.json()["subnet"]["network_id"]
    for index, (name, address) in enumerate(INSTANCES.items(), start=1):
        port = {
            "network_id": network,
            "name": f"{name}-port",
            "device_owner": "compute:nova",
            "device_id": f"00000000-0000-4000-8000-00000000000{index}",
            "dns_name": name,
            "fixed_ips": [{"subnet_id": LOOPBACK_SUBNET, "ip_address": address}],
        }
        made = httpx.post(
            f"{lbaas.url}/v2.0/ports", json={"port": port}, headers=headers, timeout=30
        )
        assert made.status_code == 201, made.text


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    with keystone_server() as keystone:
        serving = serve_with_keystone(tmp_path_factory.mktemp("horizon"), keystone, "lbaas")
        lbaas = next(serving)
        try:
            keystone.register_service("load-balancer", "octavia", lbaas.url)
            keystone.register_service("network", "neutron", lbaas.url)
            keystone.register_service("compute", "nova", f"{lbaas.url}/compute/v2.1")
            roles = ("member", "reader", "load-balancer_member")
            keystone.user(USER, PASSWORD, PROJECT, roles)
            with horizon_server(keystone.url) as horizon:
                cloud = Cloud(keystone, lbaas, horizon)
                _instances(lbaas, cloud.token())
                yield cloud
        finally:
            for _ in serving:  # the rest of the generator stops lbaas serve
                pass


def log_in(page: Any, horizon: str) -> None:
    page.goto(horizon + "auth/login/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PASSWORD)
    page.click("#loginBtn", no_wait_after=True)
    page.wait_for_url("**/project/**")


def _step(page: Any, title: str) -> Any:
    page.locator(".wizard-nav a, .wizard-nav li", has_text=title).first.click()
    return page.locator(".step:visible, [ng-form]:visible").last


def run_wizard(page: Any, horizon: str) -> None:
    """Project → Network → Load Balancers → Create Load Balancer, every step filled."""
    page.goto(horizon + "project/load_balancer/")
    page.get_by_role("button", name="Create Load Balancer").click()
    modal = page.locator(".modal-dialog")
    modal.locator("input#name:visible").fill(LB_NAME)
    # The subnet chooser: a text box whose drop-down lists the subnets lbaas serves.
    subnets = modal.locator('filter-select[ng-model="model.spec.loadbalancer.vip_subnet_id"]')
    subnets.locator("input[type=text]").click()
    subnets.locator(".filter-select-options tbody tr", has_text="lbaas-loopback").click()

    page.get_by_text("Listener Details", exact=True).click()
    modal.locator("select#protocol:visible").select_option(label="HTTP")
    modal.locator("input#port:visible").fill("80")

    page.get_by_text("Pool Details", exact=True).click()
    modal.locator("select#method:visible").select_option(label="Round Robin")

    page.get_by_text("Pool Members", exact=True).click()
    ports = modal.locator("input[name$='-port']:visible")
    for count, name in enumerate(INSTANCES, start=1):
        modal.locator("tr:visible", has_text=name).locator("button").first.click()
        # Added: the instance moves to the allocated table, with a port to fill.
        ports.nth(count - 1).wait_for()
    for index in range(len(INSTANCES)):
        ports.nth(index).fill("80")

    page.get_by_text("Monitor Details", exact=True).click()
    modal.locator("select#type:visible").select_option(label="HTTP")
    modal.locator("input#interval:visible").fill("5")
    modal.locator("input#retry:visible").fill("3")
    modal.locator("input#timeout:visible").fill("5")
    modal.locator("button.finish").click()
    modal.wait_for(state="detached")


def _record_failure(response: Any, failed: list[str]) -> None:
    """Horizon's REST calls that failed: each names the service call behind it."""
    if "/api/" in response.url and response.status >= 400:
        failed.append(f"{response.status} {response.request.method} {response.url}")


def _screenshot(page: Any, tmp_path: Path) -> None:
    shot = tmp_path / "horizon.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("LBAAS_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(shot, ROOT / "docs" / "horizon.png")


def test_the_create_wizard_makes_an_active_load_balancer(cloud: Cloud, tmp_path: Path) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        failed: list[str] = []
        page.on("response", lambda r: _record_failure(r, failed))
        log_in(page, cloud.horizon.url)
        run_wizard(page, cloud.horizon.url)
        assert not failed, f"{failed}\n{cloud.horizon.log[-3000:]}"
        # Horizon makes the listener, pool, members and monitor one after the other in
        # its own threads, each once the load balancer is ACTIVE again after the last.
        wait_until(lambda: _tree_done(cloud), TIMEOUT_MS / 1000, "the wizard's last step")
        page.reload()
        row = page.locator("table tbody tr:visible", has_text=LB_NAME).first
        expect(row).to_contain_text("Active", timeout=TIMEOUT_MS)
        _screenshot(page, tmp_path)

        # The detail pages: listener, pool, members, monitor, each with its status.
        row.get_by_role("link", name=LB_NAME).click()
        _tab(page, "Listeners")
        _open(page, "HTTP", "/listeners/", "L7 Policies")
        _tab(page, "Pools")
        _open(page, "HTTP", "/pools/", "Health Monitors")
        _tab(page, "Members")
        for address, status in _members(cloud).items():
            shown = page.locator("table tbody tr:visible", has_text=address).first
            expect(shown).to_contain_text("Active", timeout=TIMEOUT_MS)
            expect(shown).to_contain_text(status, timeout=TIMEOUT_MS)
        _tab(page, "Health Monitors")
        monitor = page.locator("table tbody tr:visible", has_text="HTTP").first
        expect(monitor).to_contain_text("Active", timeout=TIMEOUT_MS)
        page.screenshot(path=str(tmp_path / "monitor.png"), full_page=True)


def _tab(page: Any, name: str) -> None:
    page.locator(".nav-tabs a:visible", has_text=name).first.click()


def _open(page: Any, text: str, path: str, its_tab: str) -> None:
    """Open the first row showing ``text`` in the current tab: it is Active, and its own
    page comes up (at ``path``, with tab ``its_tab``: the previous page's tabs stay in the
    document for a moment after the address changes)."""
    row = page.locator("table tbody tr:visible", has_text=text).first
    expect(row).to_contain_text("Active", timeout=TIMEOUT_MS)
    row.locator("a").first.click()
    page.wait_for_url(f"**{path}**")
    page.locator(".nav-tabs a:visible", has_text=its_tab).first.wait_for()


def _tree_done(cloud: Cloud) -> bool:
    """The wizard's load balancer is ACTIVE with its whole tree: a listener, a pool with
    both members and a health monitor (as lbaas holds them; a pool without a monitor has
    no ``healthmonitor_id``, as Octavia's answer leaves it out)."""
    headers = cloud.token()
    lbs = httpx.get(f"{cloud.lbaas.url}/v2/lbaas/loadbalancers", headers=headers)
    (lb,) = [b for b in lbs.json()["loadbalancers"] if b["name"] == LB_NAME]
    assert lb["vip_subnet_id"] == LOOPBACK_SUBNET
    pools = httpx.get(f"{cloud.lbaas.url}/v2/lbaas/pools", headers=headers).json()["pools"]
    if lb["provisioning_status"] != "ACTIVE" or not pools or not lb["listeners"]:
        return False
    (pool,) = pools
    assert pool["lb_algorithm"] == "ROUND_ROBIN"
    return len(pool["members"]) == len(INSTANCES) and pool.get("healthmonitor_id") is not None


def _members(cloud: Cloud) -> dict[str, str]:
    """Each member's address and operating status as Horizon words it ("Offline")."""
    headers = cloud.token()
    pools = httpx.get(f"{cloud.lbaas.url}/v2/lbaas/pools", headers=headers).json()["pools"]
    (pool,) = pools
    url = f"{cloud.lbaas.url}/v2/lbaas/pools/{pool['id']}/members"
    members = httpx.get(url, headers=headers).json()["members"]
    assert sorted(m["address"] for m in members) == sorted(INSTANCES.values())
    return {m["address"]: m["operating_status"].replace("_", " ").title() for m in members}
