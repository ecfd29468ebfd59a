"""Fixtures of the agent's end-to-end tests: short directories, backends, a manager."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_e2e_support import Backend
from scratch_net import ScratchNet

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.host.loopback import LoopbackHostOps
from lbaas.host.real import RealHostOps


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: unix socket paths are limited to 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="lbe-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def backends() -> Iterator[list[Backend]]:
    servers = [Backend("backend-a"), Backend("backend-b")]
    try:
        yield servers
    finally:
        for server in servers:
            server.close()


@pytest.fixture
def host_ops() -> LoopbackHostOps:
    return LoopbackHostOps()


@pytest.fixture
def manager(short_dir: Path, host_ops: LoopbackHostOps) -> Iterator[AmphoraRegistry]:
    if shutil.which("haproxy") is None:
        pytest.fail("haproxy is not installed")
    manager = AmphoraRegistry(short_dir / "amphorae", host_ops)
    try:
        yield manager
    finally:
        for amphora_id in manager.amphora_ids():
            manager.delete(amphora_id)


@pytest.fixture
def host() -> RealHostOps:
    """Netns mode's host operations; the tests that take it need root."""
    if os.geteuid() != 0:
        pytest.skip("netns mode needs root")
    return RealHostOps()


@pytest.fixture
def testnet(host: RealHostOps) -> Iterator[ScratchNet]:
    """Client and backend namespaces the test plugs into the agent's bridges."""
    net = ScratchNet()
    try:
        yield net
    finally:
        net.remove(host)
