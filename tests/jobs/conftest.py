"""Job-queue suites: a database and control plane without a running worker.

Tests drive the worker by hand (``worker.run_once()``) so each branch of the runner is
exercised deterministically.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.api_client import Api
from tests.support.control_plane import asgi_app, build_plane, make_settings


@pytest.fixture
def idle_plane(state_dir: Path) -> Iterator[Any]:
    """A control plane whose worker is built but not started."""
    settings = make_settings(
        state_dir, worker={"max_attempts": 3, "backoff_base": 0.0, "backoff_max": 0.0}
    )
    plane = build_plane(settings)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def idle_api(idle_plane: Any) -> Iterator[Api]:
    with TestClient(asgi_app(idle_plane)) as client:
        yield Api(client, "p-alpha", "member")
