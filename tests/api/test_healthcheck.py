"""``/healthcheck``: off by default (404, as Octavia); when on, plain text that follows
the database — 200 while it answers, 503 once it does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from lbaas.api.app import create_asgi_app
from lbaas.api.services import ApiServices
from lbaas.db.engine import Database
from tests.support.control_plane import make_settings
from tests.support.fake_providers import noop_registry


class TestEnabled:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"api": {"healthcheck_enabled": True}}

    def test_ok_while_the_database_answers(self, client: TestClient) -> None:
        got = client.get("/healthcheck")
        assert (got.status_code, got.text) == (200, "OK")
        assert got.headers["content-type"].startswith("text/plain")
        head = client.head("/healthcheck")
        assert (head.status_code, head.content) == (200, b"")
        # No identity is needed (a prober sends none), and only GET and HEAD exist.
        assert client.post("/healthcheck").status_code == 405


def test_off_by_default(client: TestClient) -> None:
    assert client.get("/healthcheck").status_code == 404


def test_503_when_the_database_is_unreachable(state_dir: Path) -> None:
    settings = make_settings(state_dir, api={"healthcheck_enabled": True})
    # Nothing listens on port 1: every connection attempt is refused, for real.
    database = Database("postgresql+psycopg://postgres@127.0.0.1:1/none")
    providers = noop_registry(settings)
    services = ApiServices(settings, database, providers)
    try:
        with TestClient(create_asgi_app(services)) as client:
            got = client.get("/healthcheck")
        assert (got.status_code, got.text) == (503, "Database unreachable.")
    finally:
        database.dispose()
