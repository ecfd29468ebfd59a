"""Listeners, pools, health monitors and members of an existing load balancer.

Reads first, then only the writes that change something: a Service whose endpoints did
not move costs reads only, a change of source ranges is one ``PUT`` of each listener's
``allowed_cidrs``, and a member change is one batch ``PUT …/members`` per pool
(Octavia makes the pool's member set equal to the body), whatever the number of members.
The caller is known only as the small ``LoadBalancerWriter`` protocol below, which keeps the
import graph of the package acyclic.
"""

from __future__ import annotations

from typing import Protocol

from lbaas.integrations.kubernetes.base import Json, OctaviaApi
from lbaas.integrations.kubernetes.desired import DesiredListener, DesiredLoadBalancer
from lbaas.integrations.kubernetes.octavia_bodies import (
    listener_body,
    listener_differs,
    listener_options,
    member_body,
    members_differ,
    monitor_body,
    monitor_differs,
    pool_body,
    pool_differs,
    pool_options,
)

V2 = "/lbaas"


class LoadBalancerWriter(Protocol):
    """What converging listeners needs of its caller (``converge.Converger`` is one): the
    API, and a wait for the load balancer's ACTIVE after every write. A protocol, so that
    this module does not import the one that calls it."""

    @property
    def api(self) -> OctaviaApi: ...

    def wait_active(self, lb_id: str) -> Json: ...


def converge_listeners(
    converger: LoadBalancerWriter,
    lb_id: str,
    desired: DesiredLoadBalancer,
    member_subnet: str | None,
) -> dict[str, Json]:
    """Make the load balancer's listeners match; the ids per listener for the record."""
    api = converger.api
    listeners = api.get(f"{V2}/listeners", {"loadbalancer_id": lb_id})["listeners"]
    pools = {p["id"]: p for p in api.get(f"{V2}/pools", {"loadbalancer_id": lb_id})["pools"]}
    have = {(item["protocol"], int(item["protocol_port"])): item for item in listeners}
    tags = list(desired.tags)
    record: dict[str, Json] = {}
    kept_pools: set[str] = set()
    for wanted in desired.listeners:
        listener = have.pop(wanted.key, None)
        if listener is None:
            body = listener_body(wanted, tags) | {"loadbalancer_id": lb_id}
            listener = api.post(f"{V2}/listeners", {"listener": body})["listener"]
            converger.wait_active(lb_id)
        elif listener_differs(wanted, listener):
            api.put(f"{V2}/listeners/{listener['id']}", {"listener": listener_options(wanted)})
            converger.wait_active(lb_id)
        pool = pools.get(listener.get("default_pool_id") or "")
        pool_id = _converge_pool(converger, lb_id, listener["id"], pool, wanted, tags)
        _converge_members(converger, lb_id, pool_id, wanted, tags, member_subnet)
        kept_pools.add(pool_id)
        record[f"{wanted.protocol}:{wanted.port}"] = {
            "listener_id": listener["id"],
            "pool_id": pool_id,
            "members": len(wanted.members),
        }
    for extra in have.values():
        _delete(converger, lb_id, f"listeners/{extra['id']}")
    for pool_id in set(pools) - kept_pools:
        _delete(converger, lb_id, f"pools/{pool_id}")
    return record


def _delete(converger: LoadBalancerWriter, lb_id: str, path: str) -> None:
    converger.api.delete(f"{V2}/{path}")
    converger.wait_active(lb_id)


def _converge_pool(
    converger: LoadBalancerWriter,
    lb_id: str,
    listener_id: str,
    pool: Json | None,
    wanted: DesiredListener,
    tags: list[str],
) -> str:
    api = converger.api
    if pool is None:
        body = pool_body(wanted, tags) | {"listener_id": listener_id}
        pool = api.post(f"{V2}/pools", {"pool": body})["pool"]
        converger.wait_active(lb_id)
    elif pool_differs(wanted, pool):
        api.put(f"{V2}/pools/{pool['id']}", {"pool": pool_options(wanted)})
        converger.wait_active(lb_id)
    _converge_monitor(converger, lb_id, pool, wanted, tags)
    return str(pool["id"])


def _converge_monitor(
    converger: LoadBalancerWriter, lb_id: str, pool: Json, wanted: DesiredListener, tags: list[str]
) -> None:
    api = converger.api
    monitor_id = pool.get("healthmonitor_id")
    found = api.get(f"{V2}/healthmonitors/{monitor_id}")["healthmonitor"] if monitor_id else None
    if found is not None and (
        wanted.monitor is None
        or found["type"] != wanted.monitor.type
        or monitor_differs(wanted.monitor, found)
    ):
        _delete(converger, lb_id, f"healthmonitors/{found['id']}")
        found = None
    if found is None and wanted.monitor is not None:
        body = monitor_body(wanted.monitor, tags) | {"pool_id": pool["id"]}
        api.post(f"{V2}/healthmonitors", {"healthmonitor": body})
        converger.wait_active(lb_id)


def _converge_members(
    converger: LoadBalancerWriter,
    lb_id: str,
    pool_id: str,
    wanted: DesiredListener,
    tags: list[str],
    member_subnet: str | None,
) -> None:
    found = converger.api.get(f"{V2}/pools/{pool_id}/members")["members"]
    if not members_differ(wanted.members, found):
        return
    members = [member_body(m, tags, member_subnet) for m in wanted.members]
    converger.api.put(f"{V2}/pools/{pool_id}/members", {"members": members})
    converger.wait_active(lb_id)
