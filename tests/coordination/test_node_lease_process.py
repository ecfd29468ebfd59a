"""A tier node's lease process renews over the network into the real PostgreSQL.

``python -m lbaas.tier.node_lease`` runs as a node's would (settings from ``LBAAS_*``
variables), with no SQLite file anywhere: its lease ``tier/h7`` appears in the suite's
PostgreSQL, held by h7; its health port answers; after SIGTERM the lease is released.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from lbaas.coordination.postgres import PostgresCoordinator
from tests.coordination.engines import POSTGRES_URL, postgres_coordinator


@pytest.fixture
def engine() -> Iterator[PostgresCoordinator]:
    with postgres_coordinator() as pg:
        yield pg


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(what: str, test: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not test():
        assert time.monotonic() < deadline, f"not within 60 s: {what}"
        time.sleep(0.05)


def test_the_node_renews_its_lease_in_postgresql_and_releases_it_on_stop(
    engine: PostgresCoordinator,
) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
    env |= {
        "LBAAS_COORDINATION__ENGINE": "postgresql",
        "LBAAS_COORDINATION__URL": POSTGRES_URL,
        "LBAAS_COORDINATION__TABLE": engine.table,
        "LBAAS_TIER__LEASE_RENEW_INTERVAL": "0.2",
        "LBAAS_TIER__LEASE_MISSED_RENEWALS": "5",
    }
    argv = [sys.executable, "-m", "lbaas.tier.node_lease", "h7", "127.0.0.1", str(port)]
    node = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert node.stdout is not None and node.stdout.readline().strip() == "ready"
        _wait(
            "h7's lease in PostgreSQL",
            lambda: [lease.holder for lease in engine.live("tier/")] == ["h7"],
        )
        assert not engine.renew("tier/h7", "somebody-else", 1)  # it is h7's
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass  # the health port answers
    finally:
        node.send_signal(signal.SIGTERM)
        _, stderr = node.communicate(timeout=60)
    assert node.returncode == 0, stderr
    assert engine.live("tier/") == []  # released on stop, not left to expire
    assert "lease held" in stderr
