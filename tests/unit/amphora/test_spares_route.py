"""``GET /v1/spares`` and ``agent.spare_amphorae``'s composition: what an operator sees and
when the agent refuses the setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.spare_slot import SpareSlots
from lbaas.amphora.spares import SparePool
from lbaas.config import AgentSettings
from lbaas.errors import ConfigError
from lbaas.fleet.agent_app import create_agent_app
from lbaas.fleet.agent_service import spare_pool_of
from lbaas.host.recording import RecordingHostOps
from lbaas.wire.amphora import AgentInfo
from lbaas.wire.spares import SparesStatus


def _client(tmp_path: Path, spares: SparePool | None) -> TestClient:
    registry = AmphoraRegistry(tmp_path, RecordingHostOps(), mode="netns", spares=spares)

    def info() -> AgentInfo:
        return AgentInfo(mode="netns", haproxy_version="test", amphora_root=str(tmp_path))

    return TestClient(create_agent_app(registry, info))


def test_an_agent_without_spares_says_none_are_configured(tmp_path: Path) -> None:
    with _client(tmp_path, None) as client:
        answer = client.get("/v1/spares")
    assert answer.status_code == 200
    assert SparesStatus.model_validate(answer.json()) == SparesStatus(configured=0)


def test_the_ready_slots_are_listed(tmp_path: Path) -> None:
    pool = SparePool(SpareSlots(tmp_path, RecordingHostOps(), "lbt-"), 2)
    pool.fill()
    with _client(tmp_path, pool) as client:
        status = SparesStatus.model_validate(client.get("/v1/spares").json())
    assert status.configured == 2 and len(status.ready) == 2
    assert all(slot.namespace.startswith("lbt-spare-") for slot in status.ready)


def test_the_setting_makes_a_pool_in_netns_mode_only(tmp_path: Path) -> None:
    host = RecordingHostOps()
    assert spare_pool_of(AgentSettings(mode="netns"), host, tmp_path) is None
    pool = spare_pool_of(AgentSettings(mode="netns", spare_amphorae=3), host, tmp_path)
    assert pool is not None and pool.size == 3
    with pytest.raises(ConfigError, match="spare_amphorae needs agent.mode = netns"):
        spare_pool_of(AgentSettings(mode="loopback", spare_amphorae=1), host, tmp_path)
