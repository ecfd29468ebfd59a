"""The state directory, the SQLite database and its journals are private to their owner."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from lbaas.db.engine import Database
from lbaas.private_files import make_private_directory, write_private
from tests.support.processes import lbaas_env


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_lbaas_makes_its_state_directory_and_database_private(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)  # as an older release, or the operator, left it
    done = subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "db", "upgrade", "--state-dir", str(state)],
        env=lbaas_env({}),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert _mode(state) == 0o700
    files = sorted(p.name for p in state.iterdir())
    assert "lbaas.sqlite" in files
    for name in files:
        assert _mode(state / name) & 0o077 == 0, name


def test_a_database_file_is_created_private_and_an_existing_one_tightened(
    tmp_path: Path,
) -> None:
    fresh = tmp_path / "fresh.sqlite"
    Database(f"sqlite:///{fresh}").engine.dispose()
    assert _mode(fresh) == 0o600
    old = tmp_path / "old.sqlite"
    old.touch(mode=0o644)
    old.chmod(0o644)
    Database(f"sqlite:///{old}").engine.dispose()
    assert _mode(old) == 0o600


def test_private_files_and_directories(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    make_private_directory(nested)
    assert _mode(tmp_path / "a") == _mode(nested) == 0o700
    (tmp_path / "wide").mkdir(mode=0o755)
    make_private_directory(tmp_path / "wide")
    assert _mode(tmp_path / "wide") == 0o700
    target = nested / "file"
    write_private(target, "text ２００")
    assert _mode(target) == 0o600 and target.read_text(encoding="utf-8") == "text ２００"
