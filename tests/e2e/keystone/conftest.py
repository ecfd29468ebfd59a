"""One real Keystone for every test under tests/e2e/keystone (setting one up costs about
half a minute of keystone-manage)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.keystone_server import KeystoneServer, keystone_server


@pytest.fixture(scope="session")
def keystone() -> Iterator[KeystoneServer]:
    with keystone_server() as server:
        yield server
