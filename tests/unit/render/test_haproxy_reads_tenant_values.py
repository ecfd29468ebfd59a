"""HAProxy itself reads hostile tenant values back exactly, as one pattern each.

``haproxy -c`` only proves a configuration parses; a value split into two patterns, or a
``$VAR`` expanded, would still parse. So this test starts the real binary on the hostile
golden graph (bound to a free loopback port), asks the runtime API for every ACL pattern it
loaded, and sends requests that only the exact values match.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lbaas.render.haproxy.probe_source import VIP_PROBE_SOURCE_PORT

from .golden_cases import HOSTILE_URL, HOSTILE_VALUES, l7_hostile_values
from .haproxy_runner import (
    free_port,
    running_haproxy,
    runtime_command,
)

pytestmark = pytest.mark.haproxy

_ACL_LINE = re.compile(r"^(\d+) \(\) acl '[^']*' file '(.*)' line \d+\.", re.MULTILINE)


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[Path, Path, int]]:
    port = free_port()
    lb = l7_hostile_values()
    lb = replace(lb, listeners=tuple(replace(lst, protocol_port=port) for lst in lb.listeners))
    with running_haproxy(lb, "127.0.0.1", "lbhx-", limit=10) as (config, _):
        yield config, config.parent / "rt.sock", port


def test_every_acl_holds_exactly_the_tenant_value(running: tuple[Path, Path, int]) -> None:
    config, sock, _ = running
    listing = runtime_command(sock, "show acl", timeout=5)
    ids = [acl_id for acl_id, path in _ACL_LINE.findall(listing) if path == str(config)]
    patterns = []
    for acl_id in ids:
        entries = runtime_command(sock, f"show acl #{acl_id}", timeout=5).removesuffix("\n\n")
        assert entries.startswith("0x") and "\n0x" not in entries, entries
        patterns.append(entries.split(" ", 1)[1])
    # Besides the tenant's: the frontend's rule for the agent's VIP probe (its address, port).
    probe = ["127.0.0.1", str(VIP_PROBE_SOURCE_PORT)]
    assert sorted(patterns) == sorted([*HOSTILE_VALUES, "^/go\\$", *probe])


def _request(port: int, path: str, headers: dict[str, str]) -> tuple[int, str | None]:
    """(status, Location header) of one GET; the connection is closed before returning."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Location")
    finally:
        conn.close()


@pytest.mark.parametrize("value", [v for v in HOSTILE_VALUES if "\n" not in v])
def test_requests_carrying_the_exact_value_are_rejected(
    running: tuple[Path, Path, int], value: str
) -> None:
    _, _, port = running
    assert _request(port, "/go$", {"X-Probe": value})[0] == 403


def test_redirect_target_is_sent_literally(running: tuple[Path, Path, int]) -> None:
    _, _, port = running
    assert _request(port, "/go$", {}) == (302, HOSTILE_URL)
