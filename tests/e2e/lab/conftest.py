"""Fixtures of the lab's tests: a 3-host lab of uniquely named namespaces, always removed."""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_probe import lab_links

from lbaas.lab.lab import Lab


@pytest.fixture
def lab_name() -> str:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    return f"t{uuid.uuid4().hex[:7]}"


@pytest.fixture
def lab(lab_name: str, tmp_path: Path) -> Iterator[Lab]:
    built = Lab(lab_name, tmp_path)
    with built.running(hosts=3):
        yield built
    assert lab_links(f"{lab_name}-") == []


@pytest.fixture
def lab_dir() -> Iterator[Path]:
    """A lab's state directory for tests that start its services (not ``lab``'s)."""
    # Short: the agents' HAProxy sockets live below it, within unix sockets' 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="lab", dir="/tmp"))
    try:
        yield directory
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)
