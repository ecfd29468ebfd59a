"""The payload of a host heartbeat: one agent announcing itself, not one amphora.

Host heartbeats travel in the same signed envelope as amphora heartbeats (same key, same
freshness rules), told apart by ``"kind": "host"`` in the payload and by the envelope's
sender, ``host:<host_id>``, so the replay guard tracks hosts and amphorae separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbaas.errors import HeartbeatRejected
from lbaas.model.fleet import HostAnnouncement, valid_host_id

HOST_KIND = "host"
SENDER_PREFIX = "host:"
_MAX_AMPHORAE = 1000


def host_sender(host_id: str) -> str:
    return f"{SENDER_PREFIX}{host_id}"


def is_host_payload(payload: Mapping[str, Any]) -> bool:
    return payload.get("kind") == HOST_KIND


def to_host_payload(seen: HostAnnouncement) -> dict[str, Any]:
    return {
        "kind": HOST_KIND,
        "host_id": seen.host_id,
        "address": seen.address,
        "port": seen.port,
        "zone": seen.zone,
        "capacity": seen.capacity,
        "amphorae": list(seen.amphorae),
    }


def from_host_payload(payload: Mapping[str, Any], sender: str) -> HostAnnouncement:
    """Decode and check a host payload; raises HeartbeatRejected."""
    try:
        seen = HostAnnouncement(
            host_id=str(payload["host_id"]),
            address=str(payload["address"]),
            port=int(payload["port"]),
            zone=str(payload["zone"]),
            capacity=int(payload["capacity"]),
            amphorae=tuple(str(a) for a in payload["amphorae"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise HeartbeatRejected(f"malformed host heartbeat: {exc}") from exc
    if not valid_host_id(seen.host_id) or sender != host_sender(seen.host_id):
        raise HeartbeatRejected(f"host heartbeat from {sender!r} names host {seen.host_id!r}")
    if not 0 < seen.port < 65536 or seen.capacity < 0 or len(seen.amphorae) > _MAX_AMPHORAE:
        raise HeartbeatRejected(f"host heartbeat of {seen.host_id} out of range")
    return seen
