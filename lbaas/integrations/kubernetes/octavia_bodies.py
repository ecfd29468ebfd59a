"""Desired state → Octavia v2 request bodies, and the comparisons that decide a write
(pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbaas.integrations.kubernetes.base import Json
from lbaas.integrations.kubernetes.desired import (
    DesiredListener,
    DesiredLoadBalancer,
    DesiredMember,
    DesiredMonitor,
)


def monitor_body(monitor: DesiredMonitor, tags: Sequence[str]) -> Json:
    body: Json = {
        "type": monitor.type,
        "delay": monitor.delay,
        "timeout": monitor.timeout,
        "max_retries": monitor.max_retries,
        "tags": list(tags),
    }
    if monitor.url_path is not None:
        body["url_path"] = monitor.url_path
    return body


def member_body(member: DesiredMember, tags: Sequence[str], subnet_id: str | None) -> Json:
    body: Json = {
        "name": member.name[:255],
        "address": member.address,
        "protocol_port": member.protocol_port,
        "tags": list(tags),
    }
    if subnet_id:
        body["subnet_id"] = subnet_id
    return body


def pool_options(listener: DesiredListener) -> Json:
    """The pool fields that may change in place."""
    persistence = {"type": "SOURCE_IP"} if listener.source_ip_persistence else None
    return {"lb_algorithm": listener.lb_algorithm, "session_persistence": persistence}


def pool_body(listener: DesiredListener, tags: Sequence[str]) -> Json:
    return {"name": listener.name, "protocol": listener.protocol, "tags": list(tags)} | (
        pool_options(listener)
    )


def listener_options(listener: DesiredListener) -> Json:
    """The listener fields that may change in place (``null`` clears the networks)."""
    return {"allowed_cidrs": list(listener.allowed_cidrs) or None}


def listener_body(listener: DesiredListener, tags: Sequence[str]) -> Json:
    body: Json = {
        "name": listener.name,
        "protocol": listener.protocol,
        "protocol_port": listener.port,
        "tags": list(tags),
    }
    if listener.allowed_cidrs:
        body["allowed_cidrs"] = list(listener.allowed_cidrs)
    return body


def listener_differs(listener: DesiredListener, found: Json) -> bool:
    """Whether the listener's networks differ from the desired ones (as sets: the API
    keeps the order it was sent, the desired state is sorted)."""
    return set(found.get("allowed_cidrs") or ()) != set(listener.allowed_cidrs)


def load_balancer_body(desired: DesiredLoadBalancer, member_subnet: str | None) -> Json:
    """The whole tree in one create (Octavia's graph create): one call, so a controller
    that dies during it leaves either nothing or a complete load balancer."""
    tags = list(desired.tags)
    listeners = []
    for listener in desired.listeners:
        pool = pool_body(listener, tags)
        pool["members"] = [member_body(m, tags, member_subnet) for m in listener.members]
        if listener.monitor is not None:
            pool["healthmonitor"] = monitor_body(listener.monitor, tags)
        listeners.append(listener_body(listener, tags) | {"default_pool": pool})
    body: Json = {
        "name": desired.name,
        "description": desired.description,
        "tags": tags,
        "listeners": listeners,
    }
    optional = {
        "vip_subnet_id": desired.vip_subnet_id,
        "vip_address": desired.vip_address,
        "provider": desired.provider,
        "flavor_id": desired.flavor_id,
    }
    body.update({key: value for key, value in optional.items() if value})
    return body


def immutable_mismatch(desired: DesiredLoadBalancer, found: Json) -> list[str]:
    """Fields that cannot change in place and differ: the load balancer must be rebuilt."""
    wrong = []
    if desired.vip_address and found.get("vip_address") != desired.vip_address:
        wrong.append("vip_address")
    if desired.provider and found.get("provider") != desired.provider:
        wrong.append("provider")
    if desired.flavor_id and found.get("flavor_id") != desired.flavor_id:
        wrong.append("flavor_id")
    return wrong


def pool_differs(listener: DesiredListener, pool: Json) -> bool:
    wanted = pool_options(listener)
    persistence = pool.get("session_persistence") or None
    have_type = persistence.get("type") if isinstance(persistence, dict) else None
    want = wanted["session_persistence"]
    want_type = want["type"] if want else None
    return bool(pool.get("lb_algorithm") != wanted["lb_algorithm"] or have_type != want_type)


def monitor_differs(monitor: DesiredMonitor, found: Json) -> bool:
    wanted: dict[str, Any] = monitor_body(monitor, ())
    wanted.pop("tags")
    return any(found.get(key) != value for key, value in wanted.items())


def member_identity(member: Json) -> tuple[str, int]:
    return (str(member["address"]), int(member["protocol_port"]))


def members_differ(desired: Sequence[DesiredMember], found: Sequence[Json]) -> bool:
    wanted = {(m.address, m.protocol_port) for m in desired}
    return wanted != {member_identity(m) for m in found} or len(found) != len(wanted)
