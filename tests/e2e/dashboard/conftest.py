"""A control plane served over real HTTP and Debian's Chromium driven by Playwright.

One control plane (SQLite, noop provider) and one browser per module (a module may
override ``plane`` and ``api``, as the Keystone one does): starting Chromium
costs a second or two on this machine, a browser context (one caller's headers) almost
nothing (``tests/support/browser.py`` launches Debian's ``/usr/bin/chromium``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.api_client import Api
from tests.support.browser import chromium
from tests.support.control_plane import asgi_app, make_settings, running_control_plane
from tests.support.served_app import served


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    state_dir = tmp_path_factory.mktemp("dashboard-state")
    settings = make_settings(state_dir, api={"dashboard_update_interval": 0.2})
    with running_control_plane(settings) as running:
        yield running


@pytest.fixture(scope="module")
def base_url(plane: Any) -> Iterator[str]:
    with served(asgi_app(plane)) as url:
        yield url


@pytest.fixture(scope="module")
def api(plane: Any) -> Iterator[Api]:
    """A member of p-alpha, calling the same control plane in-process (for set-up)."""
    with TestClient(asgi_app(plane)) as client:
        yield Api(client, "p-alpha", "member")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


class Pages:
    """Opens the dashboard as a caller: a browser context that sends that caller's
    identity headers on every request (the page, its script, the event stream and the
    API calls of its buttons), as an authenticating proxy in front would."""

    def __init__(self, browser: Any, base_url: str, shots: Path) -> None:
        self._browser = browser
        self._base_url = base_url
        self._contexts: list[Any] = []
        self.shots = shots
        #: Every URL the pages opened by open_bare requested.
        self.urls: list[str] = []

    def open(self, project: str, roles: str) -> Any:
        headers = {"X-Project-Id": project, "X-Roles": roles}
        context = self._browser.new_context(
            base_url=self._base_url,
            extra_http_headers=headers,
            viewport={"width": 1280, "height": 720},
        )
        self._contexts.append(context)
        page = context.new_page()
        page.goto("/dashboard")
        return page

    def open_bare(self) -> Any:
        """The dashboard in a browser context that sends no identity of its own (under
        auth_strategy = keystone the page logs in itself)."""
        context = self._browser.new_context(
            base_url=self._base_url, viewport={"width": 1280, "height": 720}
        )
        self._contexts.append(context)
        page = context.new_page()
        page.on("request", lambda request: self.urls.append(request.url))
        page.goto("/dashboard")
        return page

    def shot(self, page: Any, name: str) -> Path:
        path = self.shots / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        for context in self._contexts:
            context.close()


@pytest.fixture
def pages(browser: Any, base_url: str, tmp_path: Path) -> Iterator[Pages]:
    """Screenshots go to the test's own tmp dir (kept by pytest as artifacts)."""
    opened = Pages(browser, base_url, tmp_path)
    try:
        yield opened
    finally:
        opened.close()
