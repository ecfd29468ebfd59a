"""``lbaas tier``'s usage errors: one line, exit 2, for settings that name no lease store."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lbaas.config import CoordinationSettings, Settings, TierSettings
from lbaas.tier.command import run, tier_coordinator
from lbaas.tier.coordinated_leases import CoordinatedLeaseReader
from lbaas.tier.lease_store import LeaseStoreUnavailable


def _settings(tmp_path: Path, **coordination: str) -> Settings:
    tier = TierSettings(nodes={"h1": "127.0.0.1:1"}, router_bird_socket=str(tmp_path / "b"))
    return Settings(
        state_dir=tmp_path, tier=tier, coordination=CoordinationSettings(**coordination)
    )


def test_no_lease_store_and_no_engine_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(tier_command="status", metrics=False)
    assert run(args, _settings(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "coordination.engine = postgresql or etcd" in err
    assert run(args, _settings(tmp_path, engine="postgresql")) == 2  # SQLite database
    assert "PostgreSQL URL" in capsys.readouterr().err


def test_an_engine_in_the_settings_is_where_the_leases_are_read(tmp_path: Path) -> None:
    coordinator = tier_coordinator(_settings(tmp_path, engine="etcd", url="http://127.0.0.1:1"))
    assert coordinator is not None
    # Unreachable: status shows the store as unavailable rather than failing.
    with pytest.raises(LeaseStoreUnavailable):
        CoordinatedLeaseReader(coordinator, 0.5).read()
