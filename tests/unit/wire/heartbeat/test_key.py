"""Without a configured heartbeat key, each installation generates its own.

Before, an unset key meant the documented default, so anyone could sign heartbeats for
any installation that had not changed it.
"""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from lbaas.config import load_settings
from lbaas.wire.heartbeat.key import KEY_FILE, heartbeat_key


def test_the_default_is_no_key_at_all() -> None:
    assert load_settings(environ={}).health.heartbeat_key == ""


def test_an_unset_key_is_generated_once_private_and_shared(tmp_path: Path) -> None:
    first = heartbeat_key("", tmp_path)
    assert len(first) >= 32
    key_file = tmp_path / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # The agent on the same state directory (or a restart) reads the very same key.
    assert heartbeat_key("", tmp_path) == first
    # Another installation gets another key.
    assert heartbeat_key("", tmp_path / "other") != first
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE, "other"]


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    keys: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: keys.append(heartbeat_key("", tmp_path))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1


def test_a_configured_key_is_used_as_it_is(tmp_path: Path) -> None:
    assert heartbeat_key("operator-chosen-key", tmp_path) == b"operator-chosen-key"
    assert not (tmp_path / KEY_FILE).exists()
