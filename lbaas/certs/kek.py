"""The key-encryption keys (KEKs) that seal the key manager's secrets at rest.

A secret's payload is stored only as AES-256-GCM ciphertext. The keys live in one JSON
file outside the database (``keymanager.kek_file``, mode 0600), so a copy of the database
alone — a backup, a dump, a stolen disk image of the database volume — reveals no key
material. Each ciphertext names the key that sealed it; the file holds a *primary* key
(used for new secrets) and, during a rotation, the older keys still needed to open
secrets not yet re-sealed. The secret's id is the AEAD's associated data, so a ciphertext
moved onto another row does not open there.

Stored form of one payload: a 12-byte random nonce followed by the GCM ciphertext and tag.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lbaas.errors import ConfigError
from lbaas.private_files import create_private_once, write_private

NONCE_BYTES = 12
KEY_BYTES = 32


class UnsealError(Exception):
    """A ciphertext that this key ring cannot open (wrong key, or altered bytes)."""


@dataclass(frozen=True)
class Sealed:
    kek_id: str
    ciphertext: bytes


@dataclass
class KeyRing:
    """The primary key and the older keys still needed to open stored secrets."""

    primary: str
    # Out of repr: a ring in a traceback, a log line or an assertion shows no key bytes.
    keys: dict[str, bytes] = field(default_factory=dict, repr=False)

    @classmethod
    def generate(cls) -> KeyRing:
        kek_id = _new_id()
        return cls(kek_id, {kek_id: AESGCM.generate_key(bit_length=KEY_BYTES * 8)})

    def seal(self, plaintext: bytes, bound_to: str) -> Sealed:
        nonce = os.urandom(NONCE_BYTES)
        body = AESGCM(self.keys[self.primary]).encrypt(nonce, plaintext, bound_to.encode())
        return Sealed(self.primary, nonce + body)

    def unseal(self, sealed: Sealed, bound_to: str) -> bytes:
        key = self.keys.get(sealed.kek_id)
        if key is None:
            raise UnsealError(f"no key-encryption key with id {sealed.kek_id}")
        nonce, body = sealed.ciphertext[:NONCE_BYTES], sealed.ciphertext[NONCE_BYTES:]
        try:
            return AESGCM(key).decrypt(nonce, body, bound_to.encode())
        except InvalidTag as exc:
            raise UnsealError(f"key-encryption key {sealed.kek_id} does not open it") from exc

    def with_new_primary(self) -> KeyRing:
        """A ring whose new primary key seals from now on; the old keys stay to open."""
        kek_id = _new_id()
        keys = dict(self.keys)
        keys[kek_id] = AESGCM.generate_key(bit_length=KEY_BYTES * 8)
        return KeyRing(kek_id, keys)

    def only_primary(self) -> KeyRing:
        return KeyRing(self.primary, {self.primary: self.keys[self.primary]})

    def to_json(self) -> str:
        keys = {k: base64.b64encode(v).decode() for k, v in self.keys.items()}
        return json.dumps({"primary": self.primary, "keys": keys}, indent=1) + "\n"


def _new_id() -> str:
    return secrets.token_hex(8)


def load_key_ring(path: Path) -> KeyRing | None:
    """The ring in ``path``; None if there is no such file. A malformed file is a
    ``ConfigError`` naming the file (never its content)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
        keys = {str(k): base64.b64decode(v, validate=True) for k, v in data["keys"].items()}
        ring = KeyRing(str(data["primary"]), keys)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a key-encryption key file ({type(exc).__name__})") from exc
    if ring.primary not in ring.keys or any(len(k) != KEY_BYTES for k in keys.values()):
        raise ConfigError(f"{path}: the primary key is missing or a key is not {KEY_BYTES} bytes")
    return ring


def create_key_ring(path: Path, ring: KeyRing) -> KeyRing:
    """Store ``ring`` as the new key file unless one exists; the ring the file holds after.

    Two processes starting at once on one state directory both find no file and both
    generate a ring: the first to create the file wins, and the other takes the winner's
    ring, so no process seals with a key the file does not keep.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if create_private_once(path, ring.to_json()):
        return ring
    stored = load_key_ring(path)
    if stored is None:
        raise ConfigError(f"{path}: created by another process, then removed")
    return stored


def save_key_ring(path: Path, ring: KeyRing) -> None:
    """Replace the file atomically, mode 0600 from its first byte."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(path, ring.to_json())
