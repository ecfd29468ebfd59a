"""The ``lbaas`` command itself: a broken provider stops start-up, subnets can be added."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.processes import lbaas_env


def _lbaas(args: list[str], settings: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lbaas.cli", *args],
        env=lbaas_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_serve_refuses_to_start_with_a_broken_provider(tmp_path: Path) -> None:
    done = _lbaas(
        ["serve"],
        {"state_dir": str(tmp_path), "providers": {"enabled": ["bogus"], "default": "bogus"}},
    )
    assert done.returncode == 2
    assert "configuration error: provider 'bogus' is enabled" in done.stderr


def test_serve_refuses_a_tls_policy_its_own_defaults_break_before_starting_anything(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    done = _lbaas(["serve"], {"state_dir": str(state), "api": {"minimum_tls_version": "TLSv1.3"}})
    assert done.returncode == 2
    assert (
        "configuration error: api.minimum_tls_version: api.default_listener_tls_versions "
        "names versions less than the minimum: TLSv1.2 < TLSv1.3"
    ) in done.stderr
    assert not state.exists()  # no database, key or worker was made first


def test_create_subnet_registers_it_for_vips(tmp_path: Path) -> None:
    settings = {"state_dir": str(tmp_path), "providers": {"enabled": ["noop"], "default": "noop"}}
    done = _lbaas(
        [
            "network",
            "create-subnet",
            "10.20.0.0/24",
            "--name",
            "tenant-a",
            "--id",
            "0a140000-0000-4000-8000-000000000001",
            "--gateway",
            "10.20.0.1",
        ],
        settings,
    )
    assert done.returncode == 0, done.stderr
    assert "subnet 0a140000-0000-4000-8000-000000000001 (10.20.0.0/24)" in done.stdout
    from lbaas.db.engine import Database
    from lbaas.db.network import network_repo

    database = Database(f"sqlite:///{tmp_path / 'lbaas.sqlite'}")
    with database.read() as session:
        subnet = network_repo.get_subnet(session, "0a140000-0000-4000-8000-000000000001")
        assert subnet is not None and subnet.name == "tenant-a" and subnet.gateway_ip == "10.20.0.1"
    database.dispose()
