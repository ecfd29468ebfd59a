"""The state directory: a default that ignores the current directory, the owner's lock,
and the refusal of a command that reads state that was never made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lbaas.config import load_settings
from lbaas.db.engine import Database
from lbaas.db.migrate import upgrade_database
from lbaas.errors import CommandRefused
from lbaas.state_directory import StateLock, default_state_dir, require_sqlite_state


def test_the_default_is_var_lib_for_root_and_xdg_state_for_anyone_else() -> None:
    assert default_state_dir({"XDG_STATE_HOME": "/x"}, 0) == Path("/var/lib/lbaas")
    assert default_state_dir({"XDG_STATE_HOME": "/x/s"}, 1000) == Path("/x/s/lbaas")
    home = {"HOME": "/home/ann"}
    assert default_state_dir(home, 1000) == Path("/home/ann/.local/state/lbaas")
    # A relative XDG_STATE_HOME is ignored, as the XDG specification says.
    assert default_state_dir({**home, "XDG_STATE_HOME": "rel"}, 1000) == Path(
        "/home/ann/.local/state/lbaas"
    )


def test_settings_default_to_it_never_to_the_current_directory() -> None:
    settings = load_settings(environ={"HOME": "/home/ann"})
    assert settings.state_dir == default_state_dir({"HOME": "/home/ann"}, os.geteuid())
    assert settings.state_dir.is_absolute()
    assert load_settings(environ={"LBAAS_STATE_DIR": "/srv/x"}).state_dir == Path("/srv/x")


def test_a_second_owner_is_refused_naming_the_first(tmp_path: Path) -> None:
    first = StateLock.acquire(tmp_path, "lbaas serve")
    try:
        with pytest.raises(CommandRefused) as refused:
            StateLock.acquire(tmp_path, "lbaas agent")
        assert str(refused.value) == (
            f"state directory {tmp_path} is in use by pid {os.getpid()} (lbaas serve): "
            "stop it first, or pass another --state-dir"
        )
    finally:
        first.release()
    StateLock.acquire(tmp_path, "lbaas agent").release()  # free again once released


def test_reading_state_that_was_never_made_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lbaas.sqlite'}"
    message = f"no lbaas state at {tmp_path}: start `lbaas serve` first or pass --state-dir"
    with pytest.raises(CommandRefused, match="no lbaas state") as refused:
        require_sqlite_state(tmp_path, url)
    assert str(refused.value) == message
    assert not (tmp_path / "lbaas.sqlite").exists()  # asking made no file
    (tmp_path / "lbaas.sqlite").write_bytes(b"")  # what older versions left: no schema
    with pytest.raises(CommandRefused, match="no lbaas state"):
        require_sqlite_state(tmp_path, url)
    database = Database(url)
    upgrade_database(database)
    database.dispose()
    require_sqlite_state(tmp_path, url)
    # A server database is not this check's business.
    require_sqlite_state(tmp_path / "nowhere", "postgresql+psycopg://postgres@127.0.0.1/x")
