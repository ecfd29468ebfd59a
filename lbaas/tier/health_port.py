"""The second half of TLB's double check: can a node's health port be connected to?

A TCP connect from wherever the watcher runs (in the lab, the router's namespace: the path
the router's traffic takes to the node). A few tries, each given its own timeout, because a
single short try on a loaded machine can miss a healthy node, and a false "failed" during a
lease store outage would withdraw it.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

from lbaas.tier.lease import HealthCheck


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """``host:port`` (a ValueError for anything else)."""
    host, _, port = endpoint.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not host:port: {endpoint!r}")
    return host, int(port)


def connects(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tcp_health_check(endpoints: Mapping[str, str], tries: int, timeout: float) -> HealthCheck:
    """A ``HealthCheck`` connecting to each node's ``host:port`` (unknown node: failed)."""
    parsed = {node: split_endpoint(endpoint) for node, endpoint in endpoints.items()}

    def check(node: str) -> bool:
        if node not in parsed:
            return False
        host, port = parsed[node]
        return any(connects(host, port, timeout) for _ in range(tries))

    return check
