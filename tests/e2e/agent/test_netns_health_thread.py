"""The health checker probing from inside a network namespace (``setns`` in its thread).

Needs root. A namespace of this test's own has a TCP server on its loopback, on a port
nothing uses in the test's own namespace: a checker whose loop thread entered the
namespace finds it up probe after probe, while one left outside finds the same address
and port closed. A namespace that does not exist makes ``start`` fail.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from lbaas.host.netns_thread import enter_network_namespace
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import HealthChange, MonitorSpec, ProbeType, Target
from lbaas.l4.health.probes import NetworkProber

pytestmark = [pytest.mark.root]

SERVE = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); print("ready", flush=True)
while True:
    s.accept()[0].close()
"""
TCP = MonitorSpec(ProbeType.TCP, delay=0.1, timeout=1.0, rise=1, fall=1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def served_namespace() -> Iterator[tuple[str, int]]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    namespace, port = f"nht-{uuid.uuid4().hex[:8]}", _free_port()
    subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
    server = None
    try:
        subprocess.run(["ip", "-n", namespace, "link", "set", "lo", "up"], check=True, timeout=30)
        server = subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", SERVE, str(port)],
            stdout=subprocess.PIPE,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == b"ready"
        yield namespace, port
    finally:
        if server is not None:
            server.kill()
            server.wait(10)
            if server.stdout is not None:
                server.stdout.close()
        subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)


def test_probes_run_inside_the_namespace_the_checker_thread_entered(
    served_namespace: tuple[str, int],
) -> None:
    namespace, port = served_namespace
    inside: list[HealthChange] = []
    outside: list[HealthChange] = []
    down_outside = threading.Event()
    enter = functools.partial(enter_network_namespace, namespace)
    in_ns = HealthChecker(NetworkProber(), inside.extend, batch_count=1, batch_delay=0.0,
                          thread_setup=enter)  # fmt: skip

    def collect(batch: list[HealthChange]) -> None:
        outside.extend(batch)
        down_outside.set()

    out_ns = HealthChecker(NetworkProber(), collect, batch_count=1, batch_delay=0.0)
    target = Target("m", "127.0.0.1", port, TCP)
    in_ns.start()
    out_ns.start()
    try:
        in_ns.set_targets("g", [target])
        out_ns.set_targets("g", [target])
        assert down_outside.wait(30), "the probe outside the namespace never failed"
        assert [(c.key, c.healthy) for c in outside] == [("m", False)]
        deadline = time.monotonic() + 30
        while in_ns.probes < 5:
            assert time.monotonic() < deadline, "the checker inside probed too little"
            time.sleep(0.05)
        assert inside == [] and in_ns.states("g") == {"m": True}
    finally:
        in_ns.stop()
        out_ns.stop()


def test_a_checker_for_a_missing_namespace_fails_to_start() -> None:
    if os.geteuid() != 0:
        pytest.skip("setns needs root")
    missing = f"nht-missing-{uuid.uuid4().hex[:8]}"
    checker = HealthChecker(
        NetworkProber(),
        lambda batch: None,
        thread_setup=functools.partial(enter_network_namespace, missing),
    )
    with pytest.raises(FileNotFoundError):
        checker.start()
    checker.stop()
