"""Typed views of the Kubernetes objects the controller reads (pure parsing of JSON).

Only the fields the controller uses are read; everything else in the object is ignored,
so a newer API server's extra fields never matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lbaas.integrations.kubernetes.names import SERVICE_NAME_LABEL

JsonObject = Mapping[str, Any]


def object_key(obj: JsonObject) -> str:
    """``namespace/name``: the key work is queued and ordered by."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


@dataclass(frozen=True)
class ServicePort:
    name: str
    protocol: str
    port: int
    target_port: int | str


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    uid: str
    resource_version: str | None
    type: str
    load_balancer_class: str | None
    load_balancer_ip: str | None
    cluster_ip: str | None
    session_affinity: str
    external_traffic_policy: str | None
    ports: tuple[ServicePort, ...]
    load_balancer_source_ranges: tuple[str, ...]
    annotations: Mapping[str, str]
    finalizers: tuple[str, ...]
    deleting: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_service(obj: JsonObject) -> Service:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    ports = tuple(
        ServicePort(
            name=str(p.get("name") or ""),
            protocol=str(p.get("protocol") or "TCP"),
            port=int(p["port"]),
            target_port=p.get("targetPort") or int(p["port"]),
        )
        for p in spec.get("ports") or ()
    )
    return Service(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        resource_version=meta.get("resourceVersion"),
        type=str(spec.get("type") or "ClusterIP"),
        load_balancer_class=spec.get("loadBalancerClass"),
        load_balancer_ip=spec.get("loadBalancerIP") or None,
        cluster_ip=spec.get("clusterIP") or None,
        session_affinity=str(spec.get("sessionAffinity") or "None"),
        external_traffic_policy=spec.get("externalTrafficPolicy"),
        ports=ports,
        load_balancer_source_ranges=tuple(
            str(item) for item in spec.get("loadBalancerSourceRanges") or ()
        ),
        annotations=dict(meta.get("annotations") or {}),
        finalizers=tuple(meta.get("finalizers") or ()),
        deleting=bool(meta.get("deletionTimestamp")),
    )


@dataclass(frozen=True)
class EndpointPort:
    name: str
    protocol: str
    port: int


@dataclass(frozen=True)
class Endpoint:
    """One ready address and the ports it serves (from a slice or a legacy subset)."""

    address: str
    ports: tuple[EndpointPort, ...]
    target_name: str | None = None


def slice_service_name(obj: JsonObject) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    name = labels.get(SERVICE_NAME_LABEL)
    return str(name) if name else None


def _ports(raw: Iterable[JsonObject]) -> tuple[EndpointPort, ...]:
    return tuple(
        EndpointPort(
            name=str(p.get("name") or ""),
            protocol=str(p.get("protocol") or "TCP"),
            port=int(p["port"]),
        )
        for p in raw
        if p.get("port") is not None
    )


def ready_endpoints_of_slice(obj: JsonObject) -> list[Endpoint]:
    """Ready endpoints of an EndpointSlice. A missing ``ready`` condition means ready,
    as the EndpointSlice API says consumers should read an unknown state."""
    ports = _ports(obj.get("ports") or ())
    found: list[Endpoint] = []
    for endpoint in obj.get("endpoints") or ():
        conditions = endpoint.get("conditions") or {}
        if conditions.get("ready") is False:
            continue
        target = (endpoint.get("targetRef") or {}).get("name")
        for address in endpoint.get("addresses") or ():
            found.append(Endpoint(address=str(address), ports=ports, target_name=target))
    return found


def ready_endpoints_of_legacy(obj: JsonObject) -> list[Endpoint]:
    """Ready addresses of a legacy Endpoints object (``notReadyAddresses`` are skipped)."""
    found: list[Endpoint] = []
    for subset in obj.get("subsets") or ():
        ports = _ports(subset.get("ports") or ())
        for address in subset.get("addresses") or ():
            target = (address.get("targetRef") or {}).get("name")
            found.append(Endpoint(address=str(address["ip"]), ports=ports, target_name=target))
    return found
