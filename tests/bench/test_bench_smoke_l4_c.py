"""Keeps ``bench/l4_c.py`` (the C half of ``bench/l4.py --only-distributed``) working: an
HAProxy backend answering itself on 127.0.0.1, wrk against it keep-alive and with
``Connection: close``, and the summary of interleaved rounds (values not judged)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bench.quick_run import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import l4_c  # noqa: E402

pytestmark = pytest.mark.skipif(not l4_c.have_c_tools(), reason="needs wrk and haproxy")


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    config = l4_c.write_backend_config(tmp_path, "smoke", "127.0.0.1", port)
    server = subprocess.Popen(l4_c.backend_argv(config), stderr=subprocess.DEVNULL)
    try:
        l4_c.wait_listening_here("127.0.0.1", port)
        yield port
    finally:
        server.terminate()
        server.wait(10)


def test_the_backend_answers_http_itself(backend: int) -> None:
    with socket.create_connection(("127.0.0.1", backend), timeout=5) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok"), answer


def test_wrk_rounds_give_rates_p99_and_ratios(backend: int) -> None:
    samples: dict[str, list[dict[str, float]]] = {}
    for _ in range(2):
        for path in ("vip", "vip_one_member", "direct"):  # one backend: only the shape counts
            for mode, keepalive in (("keepalive", True), ("close", False)):
                run = l4_c.wrk_run((), "127.0.0.1", backend, 1, keepalive)
                assert run["per_s"] > 0 and run["p99_ms"] > 0 and run["errors"] == 0, run
                samples.setdefault(f"{mode}_{path}", []).append(run)
    figures: dict[str, Any] = l4_c.summarize(samples)
    for mode in ("keepalive", "close"):
        for path in ("vip", "vip_one_member"):
            assert figures[f"{mode}_{path}_over_direct"] > 0
            assert len(figures[f"{mode}_{path}_over_direct_paired"]) == 2
        assert figures[f"{mode}_direct_p99_ms"] > 0
    described = l4_c.describe()
    assert described["tcp_client"].startswith("wrk ") and "HAProxy" in described["tcp_backend"]


def test_without_wrk_the_tools_are_reported_missing() -> None:
    assert not l4_c.have_c_tools(lambda name: None if name == "wrk" else shutil.which(name))
    assert l4_c.have_c_tools(shutil.which)
