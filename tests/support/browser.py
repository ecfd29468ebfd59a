"""Debian's Chromium driven by Playwright, for the dashboard's browser tests.

Playwright's own browser download is not used (it cannot be fetched here, and the
distribution's browser is the one people run): ``/usr/bin/chromium`` is launched with the
flags known to work on these machines — no sandbox (root, no user namespaces) and nothing
that reaches the network on its own.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched browser, closed afterwards; the test is skipped without chromium."""
    if shutil.which(CHROMIUM) is None:
        pytest.skip("Debian's chromium is not installed (quickstart installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()
