"""The key ring: AES-GCM sealing bound to the secret's id, its file, rotation of keys."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from lbaas.certs.kek import (
    KeyRing,
    Sealed,
    UnsealError,
    create_key_ring,
    load_key_ring,
    save_key_ring,
)
from lbaas.errors import ConfigError


def test_sealed_payload_opens_only_for_its_own_id_and_key() -> None:
    ring = KeyRing.generate()
    sealed = ring.seal(b"-----BEGIN PRIVATE KEY-----", "secret-1")
    assert b"PRIVATE" not in sealed.ciphertext
    assert sealed.kek_id == ring.primary
    assert ring.unseal(sealed, "secret-1") == b"-----BEGIN PRIVATE KEY-----"
    with pytest.raises(UnsealError):
        ring.unseal(sealed, "secret-2")  # moved onto another row
    with pytest.raises(UnsealError, match="no key-encryption key"):
        KeyRing.generate().unseal(sealed, "secret-1")
    stranger = KeyRing.generate()
    other = KeyRing("same-id", {"same-id": stranger.keys[stranger.primary]})
    with pytest.raises(UnsealError, match="does not open"):
        other.unseal(Sealed("same-id", sealed.ciphertext), "secret-1")


def test_a_new_primary_keeps_old_keys_until_dropped() -> None:
    ring = KeyRing.generate()
    old = ring.seal(b"x", "s")
    rotated = ring.with_new_primary()
    assert rotated.primary != ring.primary
    assert rotated.unseal(old, "s") == b"x"
    assert rotated.seal(b"y", "t").kek_id == rotated.primary
    with pytest.raises(UnsealError):
        rotated.only_primary().unseal(old, "s")


def test_the_file_is_private_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "km" / "kek"
    assert load_key_ring(path) is None
    ring = KeyRing.generate()
    save_key_ring(path, ring)
    assert path.stat().st_mode & 0o777 == 0o600
    loaded = load_key_ring(path)
    assert loaded is not None
    assert loaded.primary == ring.primary and loaded.keys == ring.keys


@pytest.mark.parametrize(
    "content", ["not json", '{"primary": "a", "keys": {"b": "AAAA"}}', '{"keys": {}}', "[]"]
)
def test_a_malformed_file_is_a_config_error_that_names_the_file(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "kek"
    path.write_text(content)
    with pytest.raises(ConfigError, match=str(path)):
        load_key_ring(path)


def test_a_ring_is_created_once_and_a_later_creator_gets_the_stored_one(tmp_path: Path) -> None:
    path = tmp_path / "state" / "keymanager.kek"
    first, second = KeyRing.generate(), KeyRing.generate()
    assert create_key_ring(path, first) is first
    assert path.stat().st_mode & 0o777 == 0o600
    adopted = create_key_ring(path, second)  # another process lost the race
    assert (adopted.primary, adopted.keys) == (first.primary, first.keys)
    assert [p.name for p in path.parent.iterdir()] == ["keymanager.kek"]  # no temporary left


def _start_and_report(path: str, ready: Any, out: Any) -> None:
    ready.wait()
    out.put(create_key_ring(Path(path), KeyRing.generate()).primary)


def test_processes_starting_at_once_all_seal_with_the_one_stored_ring(tmp_path: Path) -> None:
    """Eight API processes racing on one state directory (CI saw two: one crashed on a
    shared temporary name, and two generated rings meant one sealed with a lost key)."""
    path = tmp_path / "keymanager.kek"
    context = multiprocessing.get_context("spawn")
    ready, out = context.Event(), context.Queue()
    starters = [
        context.Process(target=_start_and_report, args=(str(path), ready, out)) for _ in range(8)
    ]
    for process in starters:
        process.start()
    ready.set()
    primaries = {out.get(timeout=60) for _ in starters}
    for process in starters:
        process.join(30)
        assert process.exitcode == 0
    stored = load_key_ring(path)
    assert stored is not None and primaries == {stored.primary}


def test_a_ring_shows_its_key_ids_never_its_keys() -> None:
    ring = KeyRing.generate()
    shown = repr(ring)
    assert ring.primary in shown
    assert all(repr(key) not in shown and key.hex() not in shown for key in ring.keys.values())
