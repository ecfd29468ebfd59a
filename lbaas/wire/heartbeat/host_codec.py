"""The payload of a host heartbeat: one agent announcing itself, not one amphora.

Host heartbeats travel in the same signed envelope as amphora heartbeats (same key, same
freshness rules), told apart by ``"kind": "host"`` in the payload and by the envelope's
sender, ``host:<host_id>``, so the replay guard tracks hosts and amphorae separately.
Each host heartbeat states the agent's wire version (``lbaas.wire.versions``), so the
health managers know every agent's without calling it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbaas.errors import HeartbeatRejected
from lbaas.model.fleet import HostAnnouncement, valid_host_id
from lbaas.wire.versions import UNSTATED, stated

HOST_KIND = "host"
SENDER_PREFIX = "host:"
_MAX_AMPHORAE = 1000
VRRP_STATES = frozenset({"MASTER", "BACKUP", "FAULT"})


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
        "vrrp": dict(seen.vrrp),
        "cert_expiration": seen.cert_expiration,
        # Controllers of version 1 read no more than the keys above and ignore this one.
        **({} if seen.wire_version is None else {"wire_version": seen.wire_version}),
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
            vrrp=_vrrp_states(payload.get("vrrp", {})),
            cert_expiration=_expiry(payload.get("cert_expiration")),
            wire_version=_wire_version(payload.get("wire_version")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise HeartbeatRejected(f"malformed host heartbeat: {exc}") from exc
    if not valid_host_id(seen.host_id) or sender != host_sender(seen.host_id):
        raise HeartbeatRejected(f"host heartbeat from {sender!r} names host {seen.host_id!r}")
    too_many = max(len(seen.amphorae), len(seen.vrrp)) > _MAX_AMPHORAE
    if not 0 < seen.port < 65536 or seen.capacity < 0 or too_many:
        raise HeartbeatRejected(f"host heartbeat of {seen.host_id} out of range")
    return seen


def _vrrp_states(value: object) -> tuple[tuple[str, str], ...]:
    """The optional ``vrrp`` object (older agents send none): amphora id -> state."""
    if not isinstance(value, Mapping):
        raise TypeError("vrrp must be an object")
    states = tuple((str(k), str(v)) for k, v in value.items())
    for _, state in states:
        if state not in VRRP_STATES:
            raise ValueError(f"unknown VRRP state {state!r}")
    return states


def _expiry(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError("cert_expiration must be a time in seconds")
    return float(value)


def _wire_version(value: object) -> int | None:
    """The version the heartbeat states; None when it states none (version 1's)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return UNSTATED
    return stated(str(value))
