"""The key ring: AES-GCM sealing bound to the secret's id, its file, rotation of keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.certs.kek import KeyRing, Sealed, UnsealError, load_key_ring, save_key_ring
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
