"""Keeps ``bench/l4_client.py`` (the client ``bench/l4.py`` runs in its namespaces) working:
against a real TCP and UDP backend on 127.0.0.1 it prints a rate and a p99."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from tests.bench.quick_run import ROOT

PEERS = ROOT / "tests" / "e2e" / "l4" / "l4_peers.py"


def test_the_client_measures_tcp_and_udp_against_a_local_backend() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(PEERS), "server", "b", "127.0.0.1", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        for protocol in ("tcp", "udp"):
            out = subprocess.run(
                [sys.executable, str(ROOT / "bench" / "l4_client.py"), protocol, "127.0.0.1",
                 str(port), "0.3"], capture_output=True, text=True, timeout=60, check=True,
            ).stdout  # fmt: skip
            figures = json.loads(out)
            assert figures["per_s"] > 0 and figures["p99_ms"] > 0, figures
    finally:
        server.kill()
        server.wait(10)
        assert server.stdout is not None
        server.stdout.close()
