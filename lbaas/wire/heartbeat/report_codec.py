"""The JSON payload of a heartbeat, to and from ``HealthReport``.

The envelope (``envelope.py``) proves who sent a datagram and that it is fresh; this module
says what its payload means. Agents encode with ``to_payload``; the health manager decodes
with ``from_payload``, which trusts nothing about the shape even of a correctly signed
payload: an agent of another version or with a bug must produce a counted rejection, not a
crash deep inside the roll-up. Every failure is a ``HeartbeatRejected`` whose message says
which field was wrong.

Payload shape::

    {"amphora_id": str, "loadbalancer_id": str,
     "listeners": {listener_id: {"state": "OPEN|FULL|DOWN",
                                 "counters": {"bytes_in": int, "bytes_out": int,
                                              "active_connections": int,
                                              "total_connections": int,
                                              "request_errors": int,
                                              "requests": int},
                                 "vip_up": bool}},
     (a counter an older agent does not send counts as 0; "vip_up" is optional: absent
     means the VIP was not probed, as from an agent older than the probe)
     "pools": {pool_id: {"state": "UP|DOWN",
                         "members": {member_id: "UP|DOWN|DRAIN|MAINT|NO_CHECK"},
                         "counters": {...},
                         "member_counters": {member_id: {...}}}}}
    (a pool's and a member's counters have the listener's names plus "check_failures";
    both are optional: an older agent sends neither)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from enum import StrEnum
from typing import Any, TypeVar

from lbaas.errors import HeartbeatRejected
from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import (
    HealthReport,
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)

# The VIP probe gauges travel as "vip_up" and are made from it by the health manager.
_PROBE_GAUGES = ("vip_probes", "vip_answered")
_COUNTER_NAMES = tuple(f.name for f in fields(ListenerCounters) if f.name not in _PROBE_GAUGES)
_E = TypeVar("_E", bound=StrEnum)


def to_payload(
    report: HealthReport, amphora_id: str, *, member_counters: bool = True
) -> dict[str, Any]:
    """The JSON-ready payload an agent seals into a heartbeat for one amphora; without
    ``member_counters``, the members' counters are left out (a pool of hundreds of
    members does not fit one datagram with them: its statuses must still get through)."""
    return {
        "amphora_id": amphora_id,
        "loadbalancer_id": report.loadbalancer_id,
        "listeners": {lid: _listener_doc(health) for lid, health in report.listeners.items()},
        "pools": {pid: _pool_doc(health, member_counters) for pid, health in report.pools.items()},
    }


def _counter_doc(counters: ListenerCounters) -> dict[str, int]:
    doc = asdict(counters)
    for name in _PROBE_GAUGES:
        del doc[name]
    return doc


def _pool_doc(health: PoolHealth, member_counters: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "state": health.state.value,
        "members": {mid: state.value for mid, state in health.members.items()},
    }
    if health.counters is not None:
        doc["counters"] = _counter_doc(health.counters)
    if health.counters is not None and member_counters:
        doc["member_counters"] = {
            mid: _counter_doc(counters) for mid, counters in health.member_counters.items()
        }
    return doc


def _listener_doc(health: ListenerHealth) -> dict[str, Any]:
    counters = _counter_doc(health.counters)
    del counters["check_failures"]  # a frontend has no health check
    doc: dict[str, Any] = {"state": health.state.value, "counters": counters}
    if health.vip_up is not None:
        doc["vip_up"] = health.vip_up
    return doc


def from_payload(payload: Mapping[str, Any]) -> tuple[str, HealthReport]:
    """Decode a payload into (amphora id, report); HeartbeatRejected if it is malformed."""
    amphora_id = _text(payload, "amphora_id")
    report = HealthReport(
        loadbalancer_id=LoadBalancerId(_text(payload, "loadbalancer_id")),
        listeners={
            ListenerId(lid): _listener(lid, doc)
            for lid, doc in _section(payload, "listeners", "payload").items()
        },
        pools={
            PoolId(pid): _pool(pid, doc)
            for pid, doc in _section(payload, "pools", "payload").items()
        },
    )
    return amphora_id, report


def _listener(listener_id: str, doc: object) -> ListenerHealth:
    where = f"listener {listener_id}"
    body = _object(doc, where)
    counters = _counters(_section(body, "counters", where), where)
    vip_up = body.get("vip_up")
    if vip_up is not None and not isinstance(vip_up, bool):
        raise _malformed(f"{where}: vip_up must be true or false")
    return ListenerHealth(
        state=_state(ListenerState, body.get("state"), where),
        counters=counters,
        vip_up=vip_up,
    )


def _counters(counters: Mapping[str, Any], where: str) -> ListenerCounters:
    values: dict[str, int] = {}
    for name in _COUNTER_NAMES:
        value = counters.get(name, 0)
        # bool is an int in Python; a counter that says "true" is a bug, not a count.
        if type(value) is not int or value < 0:
            raise _malformed(f"{where}: counter {name} must be a non-negative integer")
        values[name] = value
    return ListenerCounters(**values)


def _pool(pool_id: str, doc: object) -> PoolHealth:
    where = f"pool {pool_id}"
    body = _object(doc, where)
    members = {
        MemberId(mid): _state(MemberState, state, f"member {mid}")
        for mid, state in _section(body, "members", where).items()
    }
    counters = None
    if "counters" in body:
        counters = _counters(_section(body, "counters", where), where)
    member_counters = {
        MemberId(mid): _counters(_object(doc, f"member {mid}"), f"member {mid}")
        for mid, doc in _section(body, "member_counters", where).items()
    }
    return PoolHealth(
        state=_state(PoolState, body.get("state"), where),
        members=members,
        counters=counters,
        member_counters=member_counters,
    )


def _state(kind: type[_E], value: object, where: str) -> _E:
    if isinstance(value, str) and value in kind.__members__.values():
        return kind(value)
    raise _malformed(f"{where}: unknown state {value!r}")


def _text(doc: Mapping[str, Any], key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise _malformed(f"{key} must be a non-empty string")
    return value


def _section(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """An optional object-valued field: missing means empty."""
    value = doc.get(key, {})
    return _object(value, f"{where}: {key}")


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _malformed(f"{where} must be an object")
    return value


def _malformed(detail: str) -> HeartbeatRejected:
    return HeartbeatRejected(f"malformed heartbeat payload: {detail}")
