"""The signed instance id a metadata proxy forwards, as Nova's metadata API checks it.

The proxy (the agent, on the instance's host) identifies the instance from the network and
source address of the request and forwards its id with an HMAC-SHA256 signature made with
a secret shared with the metadata service; the service answers only when the signature
verifies, so a request can speak only for the instance the proxy found. The secret is
generated per installation (``<state_dir>/metadata_proxy.key``) unless configured.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from lbaas.wire.heartbeat.key import load_or_create_key

INSTANCE_ID = "X-Instance-ID"
SIGNATURE = "X-Instance-ID-Signature"
TENANT_ID = "X-Tenant-ID"
FORWARDED_FOR = "X-Forwarded-For"
SECRET_FILE = "metadata_proxy.key"


def shared_secret(configured: str, state_dir: Path) -> bytes:
    """The configured secret, or the installation's (created at first use, 0600)."""
    if configured:
        return configured.encode()
    return load_or_create_key(state_dir / SECRET_FILE, "metadata.shared_secret")


def sign(secret: bytes, instance_id: str) -> str:
    return hmac.new(secret, instance_id.encode(), hashlib.sha256).hexdigest()


def verifies(secret: bytes, instance_id: str, signature: str) -> bool:
    """Whether ``signature`` is the instance id's; compared in constant time."""
    return hmac.compare_digest(sign(secret, instance_id), signature)


def is_identity_header(name: str) -> bool:
    """Headers only the proxy may set: a client's are dropped before signing."""
    lowered = name.lower()
    return lowered.startswith(INSTANCE_ID.lower()) or lowered == TENANT_ID.lower()
