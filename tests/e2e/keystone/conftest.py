"""One real Keystone for every test under tests/e2e/keystone (setting one up costs tens
of seconds of keystone-manage), and ``lbaas serve`` validating its tokens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Served, serve
from tests.support.keystone_server import KeystoneServer, keystone_server


@pytest.fixture(scope="session")
def keystone() -> Iterator[KeystoneServer]:
    with keystone_server() as server:
        yield server


def serve_with_keystone(
    tmp_path: Path, keystone: KeystoneServer, service_user: str, **authtoken: Any
) -> Iterator[Served]:
    """``lbaas serve`` (noop provider) with auth_strategy = keystone against ``keystone``,
    validating as ``service_user`` (made here)."""
    name, password = keystone.service_user(service_user)
    settings: dict[str, Any] = {
        "providers": {"enabled": ["noop"], "default": "noop"},
        "api": {"auth_strategy": "keystone", "enforce_new_defaults": False},
        "keystone_authtoken": {
            "auth_url": keystone.url,
            "username": name,
            "password": password,
            "project_name": "service",
            **authtoken,
        },
    }
    yield from serve(tmp_path, settings)
