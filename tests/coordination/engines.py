"""The coordination engines under test: the embedded one, a real PostgreSQL, a real etcd.

PostgreSQL is the suite's (127.0.0.1:5432, database ``test``), each test with a lease
table of its own name; etcd is started here on two free loopback ports with a data
directory of the test's, tuned so a lease may be as short as one second, and stopped after.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lbaas.coordination.etcd import EtcdCoordinator
from lbaas.coordination.postgres import PostgresCoordinator

POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@contextmanager
def postgres_coordinator() -> Iterator[PostgresCoordinator]:
    engine = PostgresCoordinator(POSTGRES_URL, f"lbaas_lease_t_{uuid.uuid4().hex[:10]}")
    engine.create()
    try:
        yield engine
    finally:
        engine.drop()
        engine.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def etcd_server(data_dir: Path) -> Iterator[str]:
    """A one-member etcd on loopback; its client URL."""
    binary = shutil.which("etcd")
    if binary is None:
        pytest.skip("etcd is not installed (Debian: etcd-server)")
    client, peer = f"http://127.0.0.1:{_free_port()}", f"http://127.0.0.1:{_free_port()}"
    argv = [binary, "--name", "t", "--data-dir", str(data_dir / "etcd")]
    argv += ["--listen-client-urls", client, "--advertise-client-urls", client]
    argv += ["--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer]
    argv += ["--initial-cluster", f"t={peer}", "--heartbeat-interval", "10"]
    argv += ["--election-timeout", "100"]
    log = (data_dir / "etcd.log").open("wb")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(client, process, data_dir / "etcd.log")
        yield client
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    engine = EtcdCoordinator(url)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                engine.live("")
                return
            except Exception as exc:  # noqa: BLE001 - not up yet, whatever the client says
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"etcd did not start: {log.read_text()[-2000:]}") from exc
                time.sleep(0.1)
    finally:
        engine.close()
