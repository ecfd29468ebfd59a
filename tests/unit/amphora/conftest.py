"""Fixtures of the agent's unit tests."""

from __future__ import annotations

import pytest
from agent_fakes import FakeRuntime


@pytest.fixture
def runtime() -> FakeRuntime:
    return FakeRuntime()
