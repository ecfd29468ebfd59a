"""The dashboard under ``auth_strategy = keystone`` in Debian's Chromium, against a real
Keystone (tests/support/keystone_server.py, one for this module): the page asks for a
login, a member logs in with a password and sees the project's load balancer live and
drains a member; a reader logs in and cannot drain or fail over (the API's own 403); a
revoked token, and a token's expiry, bring the login back; a pasted token works too. No
request the page makes carries the token in its URL (where access logs would keep it):
the token goes in X-Auth-Token, the event stream included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.e2e.dashboard.conftest import Pages
from tests.support.api_client import Api
from tests.support.control_plane import asgi_app, make_settings, running_control_plane
from tests.support.keystone_server import KeystoneServer, keystone_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PROJECT, PASSWORD = "dash-a", "dashboard-password"
USERS = {"dash-member": "member", "dash-reader": "reader"}


class TokenApi(Api):
    """The test's own calls, as a Keystone user (its token, not identity headers)."""

    def __init__(self, client: TestClient, token: str) -> None:
        super().__init__(client)
        self.token = token

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.token}


@pytest.fixture(scope="module")
def keystone() -> Iterator[KeystoneServer]:
    with keystone_server() as server:
        yield server


@pytest.fixture(scope="module")
def plane(keystone: KeystoneServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    name, password = keystone.service_user("lbaas-dashboard")
    for user, role in USERS.items():
        keystone.user(user, PASSWORD, PROJECT, (role,))
    settings = make_settings(
        tmp_path_factory.mktemp("dashboard-keystone"),
        # Short streams and cache: a revoked token is noticed within seconds.
        api={
            "auth_strategy": "keystone",
            "dashboard_update_interval": 0.2,
            "dashboard_stream_seconds": 2.0,
        },
        keystone_authtoken={
            "auth_url": keystone.url,
            "username": name,
            "password": password,
            "project_name": "service",
            "token_cache_time": 1.0,
        },
    )
    with running_control_plane(settings) as running:
        yield running


@pytest.fixture(scope="module")
def api(plane: Any, keystone: KeystoneServer) -> Iterator[Api]:
    with TestClient(asgi_app(plane)) as client:
        yield TokenApi(client, keystone.token("dash-member", PASSWORD, PROJECT))


@pytest.fixture(scope="module")
def tree(api: Api) -> dict[str, Any]:
    lb = api.create_lb(name="keystone-web")
    pool = api.create_pool(lb["id"])
    member = api.create_member(lb["id"], pool["id"], address="127.0.0.7", weight=4)
    return {"lb": lb, "pool": pool, "member": member}


def _log_in(pages: Pages, user: str, password: str = PASSWORD) -> Any:
    """The dashboard opened with no identity of its own, and the login form filled in."""
    page = pages.open_bare()
    form = page.locator("#login-password")
    form.wait_for()
    assert page.locator("#login-why").inner_text().startswith("Log in")
    form.locator("input[name=username]").fill(user)
    form.locator("input[name=password]").fill(password)
    form.locator("input[name=project]").fill(PROJECT)
    form.locator("button[type=submit]").click()
    return page


def _weight(api: Api, tree: dict[str, Any]) -> int:
    path = f"/v2/lbaas/pools/{tree['pool']['id']}/members/{tree['member']['id']}"
    return int(api.get(path).json()["member"]["weight"])


def _token(page: Any) -> str:
    return str(page.evaluate("JSON.parse(sessionStorage.getItem('lbaas-keystone-token')).token"))


def _no_token_in_urls(pages: Pages, token: str) -> None:
    assert pages.urls and not [url for url in pages.urls if token in url]


def test_a_member_logs_in_sees_the_load_balancer_and_drains(
    pages: Pages, tree: dict[str, Any], api: Api
) -> None:
    page = _log_in(pages, "dash-member", "not-the-password")
    page.locator("#login-why", has_text="Not logged in (401)").wait_for()
    page = _log_in(pages, "dash-member")
    section = page.locator(f"section.lb[data-id='{tree['lb']['id']}']")
    section.wait_for()
    assert "keystone-web" in section.locator("h2").inner_text()
    assert page.locator("#who").inner_text() == f"dash-member · project {PROJECT}"
    page.locator("#live[data-state='live']").wait_for()
    row = section.locator(f"tr.member[data-id='{tree['member']['id']}']")
    row.locator("button.drain").click()
    page.locator("#notice.ok").wait_for()
    wait_until(lambda: _weight(api, tree) == 0, 15, "the member drained")
    row.locator("button.enable").click()
    wait_until(lambda: _weight(api, tree) == 4, 15, "the weight put back")
    api.wait_lb(tree["lb"]["id"])
    _no_token_in_urls(pages, _token(page))
    pages.shot(page, "keystone-member")


def test_a_reader_logs_in_and_cannot_drain_or_fail_over(
    pages: Pages, tree: dict[str, Any], api: Api
) -> None:
    page = _log_in(pages, "dash-reader")
    row = page.locator(f"tr.member[data-id='{tree['member']['id']}']")
    row.locator("button.drain").click()
    page.wait_for_function("document.getElementById('notice').textContent.includes('403')")
    assert "Refused (403)" in page.locator("#notice").inner_text()
    page.locator(f"section.lb[data-id='{tree['lb']['id']}'] button.failover").click()
    page.wait_for_function("document.getElementById('notice').textContent.includes('403')")
    assert _weight(api, tree) == 4
    assert (
        api.get(f"/v2/lbaas/loadbalancers/{tree['lb']['id']}").json()["loadbalancer"][
            "provisioning_status"
        ]
        == "ACTIVE"
    )
    pages.shot(page, "keystone-reader-refused")


def test_a_revoked_token_brings_the_login_back(
    pages: Pages, tree: dict[str, Any], keystone: KeystoneServer
) -> None:
    page = _log_in(pages, "dash-member")
    page.locator(f"section.lb[data-id='{tree['lb']['id']}']").wait_for()
    page.locator("#live[data-state='live']").wait_for()
    token = _token(page)
    keystone.revoke(token)
    # The next stream (every 2 s) is refused once the 1 s cache lets the token go.
    page.locator("#live[data-state='out']").wait_for(timeout=20_000)
    assert "refused the token" in page.locator("#login-why").inner_text()
    assert page.locator("section.lb").count() == 0
    assert page.evaluate("sessionStorage.getItem('lbaas-keystone-token')") is None
    _no_token_in_urls(pages, token)
    pages.shot(page, "keystone-login-again")


def test_a_pasted_token_works_too(
    pages: Pages, tree: dict[str, Any], keystone: KeystoneServer
) -> None:
    page = pages.open_bare()
    page.locator("#login-token").wait_for()
    token = keystone.token("dash-reader", PASSWORD, PROJECT)
    page.locator("#login-token input[name=token]").fill(token)
    page.locator("#login-token button[type=submit]").click()
    page.locator(f"section.lb[data-id='{tree['lb']['id']}']").wait_for()
    assert page.locator("#who").inner_text() == "token"
    page.locator("#logout").click()
    page.locator("#login-password").wait_for()
    assert page.locator("section.lb").count() == 0
    # A login that says when its token ends (as POST /dashboard/login does) ends then.
    soon = "new Date(Date.now() + 3000).toISOString()"
    page.evaluate(
        f"t => loggedIn({{token: t, expires_at: {soon}, user: 'u', project: 'p'}})", token
    )
    page.locator(f"section.lb[data-id='{tree['lb']['id']}']").wait_for()
    page.locator("#login-why", has_text="Your token expired").wait_for()
    assert page.locator("section.lb").count() == 0
