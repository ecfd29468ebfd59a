"""Fixtures of the tier's tests: a unique lab name (root only)."""

from __future__ import annotations

import os
import uuid

import pytest


@pytest.fixture
def lab_name() -> str:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    return f"t{uuid.uuid4().hex[:7]}"


@pytest.fixture(scope="module")
def module_lab_name() -> str:
    """One lab per test module: building it is most of a tier test's cost."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    return f"t{uuid.uuid4().hex[:7]}"
