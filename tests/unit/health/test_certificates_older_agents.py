"""An agent of wire version 1 has no certificate routes: the health manager's renewal round
passes it by with a log line instead of counting a failure, and both CA rotation commands
are refused, naming it, before anything changes."""

from __future__ import annotations

import datetime
import logging
from pathlib import Path

import httpx
import pytest

from lbaas.certs import rotation
from lbaas.errors import CommandRefused
from lbaas.fleet.client import AgentClient
from lbaas.fleet.peer_versions import PeerVersions
from lbaas.health.certificates import FleetCertificates, FleetHost
from lbaas.model.fleet import HostAddress
from lbaas.wire.amphora import AgentInfo

NOW = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
OLD = FleetHost(HostAddress("old-1", "127.0.0.1", 1), up=True)


def _old_agent(paths: list[str]) -> httpx.MockTransport:
    """Version 1: states nothing, answers 404 to the certificate routes."""

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/v1/info":
            info = AgentInfo(mode="netns", haproxy_version="2.8", amphora_root="/x")
            return httpx.Response(200, json=info.model_dump(exclude={"wire_version"}))
        return httpx.Response(404, json={"detail": "Not Found"})

    return httpx.MockTransport(handler)


def _fleet(tmp_path: Path, paths: list[str], versions: PeerVersions) -> FleetCertificates:
    def clients(where: HostAddress) -> AgentClient:
        return AgentClient(
            "https://old", transport=_old_agent(paths), peer=where.host_id, versions=versions
        )

    return FleetCertificates(tmp_path / "pki", lambda: [OLD], clients, versions)


def test_a_renewal_round_passes_an_older_agent_by(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths: list[str] = []
    versions = PeerVersions()
    caplog.set_level(logging.INFO, logger="lbaas.health.certificates")
    assert _fleet(tmp_path, paths, versions).renew_due(NOW) == []
    assert paths == ["/v1/info"]  # no certificate route asked
    failures = [r for r in caplog.records if "not renewed:" in r.message]
    assert not failures  # the failure line of an agent away
    assert not [
        r
        for r in caplog.records
        if r.name == "lbaas.health.certificates" and r.levelno >= logging.WARNING
    ]
    assert any("host old-1 not renewed this round" in r.message for r in caplog.records)
    assert versions.snapshot() == {"old-1": 1}


def test_a_rotation_is_refused_while_an_older_agent_is_enrolled(tmp_path: Path) -> None:
    paths: list[str] = []
    fleet = _fleet(tmp_path, paths, PeerVersions())
    fleet.controller_identity(NOW)
    with pytest.raises(CommandRefused, match="old-1 \\(wire version 1\\)"):
        fleet.begin_rotation()
    assert rotation.phase(tmp_path / "pki") == "none"  # no new CA made
    assert fleet.begin_rotation(skip=frozenset({"old-1"})) == []  # left out: it goes on
    with pytest.raises(CommandRefused, match="rotate-ca finish` refused: the agent of old-1"):
        fleet.finish_rotation()
    assert "/v1/trust" not in paths
