"""The dashboard on a real data plane: ``lbaas serve`` (noauth: the browser is the default
project's administrator), a real agent and HAProxy, real backends on loopback, Debian's
Chromium. A backend stopped during the test turns red on the open page, and a drain
clicked on the page takes it out of HAProxy's rotation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import spread, wait_serving
from tests.support.browser import chromium
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

MONITOR = {
    "type": "HTTP",
    "delay": 1,
    "timeout": 1,
    "max_retries": 1,
    "max_retries_down": 1,
    "url_path": "/",
    "expected_codes": "200",
}


@pytest.fixture
def page(serve: ServeInstance) -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(base_url=serve.url, viewport={"width": 1280, "height": 720})
        try:
            yield context.new_page()
        finally:
            context.close()


def test_a_stopped_backend_turns_red_and_a_drain_reaches_haproxy(
    page: Any, api: OctaviaApi, backends: BackendFleet, tmp_path: Path
) -> None:
    one, two, three = backends.http("one", "two", "three")
    with loadbalancer(api, "dashboard") as lb:
        service = http_service(lb, [one, two, three])
        api.create_healthmonitor(lb.id, service.pool["id"], **MONITOR)
        for name in ("one", "two", "three"):
            wait_until(
                lambda name=name: service.member_status(name) == "ONLINE",  # type: ignore[misc]
                30.0,
                f"member {name} ONLINE",
            )
        wait_serving(service.vip, service.port)
        page.goto("/dashboard")
        page.locator("#live[data-state='live']").wait_for()
        page.evaluate("window.loadedOnce = true")

        three.stop()
        three_id = service.members["three"]["id"]
        red = f"tr.member[data-id='{three_id}'][data-operating-status='ERROR']"
        page.locator(red).wait_for(timeout=30_000)
        assert page.evaluate("window.loadedOnce") is True  # no reload happened
        page.screenshot(path=str(tmp_path / "backend-stopped.png"), full_page=True)

        one_id = service.members["one"]["id"]
        assert "one" in spread(service.vip, service.port, 6)  # in rotation before the drain
        page.locator(f"tr.member[data-id='{one_id}'] button.drain").click()
        page.locator(f"tr.member[data-id='{one_id}'][data-weight='0']").wait_for()
        api.wait_active(lb.id)
        assert api.member(service.pool["id"], one_id)["weight"] == 0
        # Weight 0 in HAProxy: no new connection goes to "one"; "three" is down.
        wait_until(lambda: set(spread(service.vip, service.port, 6)) == {"two"}, 30, "drained")
        page.screenshot(path=str(tmp_path / "drained.png"), full_page=True)
