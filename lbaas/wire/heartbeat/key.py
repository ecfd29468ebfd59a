"""The heartbeat HMAC key: the configured one, or one generated per installation.

A shipped default key is no key at all: anyone who read the documentation could sign
heartbeats. So with ``health.heartbeat_key`` left empty, the first process to start (the
health manager or the local agent, whichever comes first) generates 32 random bytes and
stores them as ``<state_dir>/heartbeat.key`` (mode 0600), as the local CA is generated
under ``<state_dir>/pki``; every later process on that state directory reads the same
key. Agents on other hosts cannot read it: configure the key explicitly there.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

from lbaas.errors import ConfigError
from lbaas.private_files import create_private_once, make_private_directory

log = logging.getLogger(__name__)

KEY_FILE = "heartbeat.key"
_KEY_BYTES = 32


def heartbeat_key(configured: str, state_dir: Path) -> bytes:
    """The key to sign and check heartbeats with (see the module doc)."""
    if configured:
        return configured.encode()
    return load_or_create_key(state_dir / KEY_FILE)


def load_or_create_key(path: Path, setting: str = "health.heartbeat_key") -> bytes:
    """Read the key at ``path``, creating it (0600, atomically) if there is none yet."""
    if not path.exists():
        make_private_directory(path.parent)
        # Created once: a process racing this one reads the key that was linked first.
        if create_private_once(path, secrets.token_hex(_KEY_BYTES) + "\n"):
            log.warning("no %s configured: generated %s", setting, path)
    key = path.read_text().strip()
    if len(key) < _KEY_BYTES:
        raise ConfigError(f"key file {path} holds fewer than {_KEY_BYTES} characters")
    return key.encode()
