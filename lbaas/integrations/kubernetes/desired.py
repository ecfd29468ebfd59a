"""Service + ready endpoints → the load balancer it should have (pure).

One listener and one pool per Service port and protocol, one member per ready endpoint
address and the target port that endpoint serves for that Service port; every listener
admits the Service's source ranges (``source_ranges``). Everything here
is a function of its arguments, so it is tested without any server.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from lbaas.config import KubernetesSettings
from lbaas.errors import PermanentError
from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.objects import Endpoint, Service, ServicePort
from lbaas.integrations.kubernetes.source_ranges import allowed_cidrs

SUPPORTED_PROTOCOLS = ("TCP", "UDP")
HEALTH_MONITOR_TYPES = ("TCP", "HTTP", "UDP-CONNECT")
LB_ALGORITHMS = ("ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP")


@dataclass(frozen=True, order=True)
class DesiredMember:
    address: str
    protocol_port: int
    name: str


@dataclass(frozen=True)
class DesiredMonitor:
    type: str
    url_path: str | None
    delay: int = 5
    timeout: int = 3
    max_retries: int = 3


@dataclass(frozen=True)
class DesiredListener:
    """A listener and its one pool (Octavia names both after the Service port)."""

    name: str
    protocol: str
    port: int
    lb_algorithm: str
    source_ip_persistence: bool
    monitor: DesiredMonitor | None
    members: tuple[DesiredMember, ...]
    allowed_cidrs: tuple[str, ...] = ()
    """The Service's source ranges, normalised and sorted; empty admits every source."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.protocol, self.port)


@dataclass(frozen=True)
class DesiredLoadBalancer:
    uid: str
    name: str
    description: str
    vip_subnet_id: str | None
    vip_address: str | None
    provider: str | None
    flavor_id: str | None
    tags: tuple[str, ...]
    listeners: tuple[DesiredListener, ...]

    def spec_record(self) -> dict[str, object]:
        """What the spec annotation records: everything but the member and source range
        lists, which are summarised by count and digest (annotations are limited to
        256 KiB together, and a Service may list thousands of ranges)."""
        record = asdict(self)
        for listener in record["listeners"]:
            members = listener.pop("members")
            listener["member_count"] = len(members)
            listener["allowed_cidr_count"] = len(listener.pop("allowed_cidrs"))
        record["digest"] = self.digest()
        return record

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def owned_class(service: Service, settings: KubernetesSettings) -> bool:
    """Whether the Service's loadBalancerClass is ours (no class: as configured)."""
    cls = service.load_balancer_class
    if cls is None:
        return settings.claim_unclassed
    prefix, _, provider = cls.partition("/")
    return prefix == settings.class_prefix and bool(provider)


def is_selected(service: Service, settings: KubernetesSettings) -> bool:
    """Whether this controller should hold a load balancer for the Service."""
    if settings.namespaces and service.namespace not in settings.namespaces:
        return False
    if service.namespace in settings.exclude_namespaces:
        return False
    if settings.require_annotation and service.annotations.get(names.ANNOTATION_ENABLED) != "true":
        return False
    if service.type == "LoadBalancer":
        return owned_class(service, settings)
    if settings.mode == "clusterip" and service.type == "ClusterIP":
        return service.cluster_ip not in (None, "None")
    return False


def _provider(service: Service, settings: KubernetesSettings) -> str | None:
    annotated = service.annotations.get(names.ANNOTATION_PROVIDER)
    if annotated:
        return annotated
    cls = service.load_balancer_class
    if cls and cls.startswith(f"{settings.class_prefix}/"):
        provider = cls.split("/", 1)[1]
        return None if provider == "default" else provider
    return None


def _vip_address(service: Service, settings: KubernetesSettings) -> str | None:
    if settings.mode == "clusterip" and service.type == "ClusterIP":
        return service.cluster_ip
    return service.annotations.get(names.ANNOTATION_VIP_ADDRESS) or service.load_balancer_ip


def _monitor(service: Service, protocol: str) -> DesiredMonitor | None:
    raw = service.annotations.get(names.ANNOTATION_HEALTH_MONITOR)
    if raw is None:
        return DesiredMonitor(type="UDP-CONNECT" if protocol == "UDP" else "TCP", url_path=None)
    kind, _, path = raw.partition(":")
    kind = kind.strip().upper()
    if kind == "NONE":
        return None
    if kind not in HEALTH_MONITOR_TYPES:
        raise PermanentError(f"{names.ANNOTATION_HEALTH_MONITOR}: unknown type {kind!r}")
    if kind == "HTTP" and protocol == "UDP":
        kind = "UDP-CONNECT"
    return DesiredMonitor(type=kind, url_path=(path or "/") if kind == "HTTP" else None)


def _algorithm(service: Service) -> str:
    algorithm = service.annotations.get(names.ANNOTATION_ALGORITHM, "ROUND_ROBIN").upper()
    if algorithm not in LB_ALGORITHMS:
        raise PermanentError(f"{names.ANNOTATION_ALGORITHM}: unknown algorithm {algorithm!r}")
    return algorithm


def _target_port(port: ServicePort, endpoint: Endpoint) -> int | None:
    """The port an endpoint serves for a Service port: slices and legacy Endpoints name
    their ports after the Service's ports (an unnamed Service port has one unnamed port)."""
    for candidate in endpoint.ports:
        if candidate.name == port.name and candidate.protocol == port.protocol:
            return candidate.port
    if isinstance(port.target_port, int) and not endpoint.ports:
        return port.target_port
    return None


def _members(port: ServicePort, endpoints: Sequence[Endpoint]) -> tuple[DesiredMember, ...]:
    found: set[DesiredMember] = set()
    for endpoint in endpoints:
        target = _target_port(port, endpoint)
        if target is not None:
            name = endpoint.target_name or endpoint.address
            found.add(DesiredMember(endpoint.address, target, name))
    return tuple(sorted(found))


def desired_load_balancer(
    service: Service, endpoints: Sequence[Endpoint], settings: KubernetesSettings
) -> DesiredLoadBalancer:
    """The load balancer a selected Service should have; PermanentError if it cannot."""
    listeners: list[DesiredListener] = []
    algorithm = _algorithm(service)
    cidrs = allowed_cidrs(service)
    for port in service.ports:
        if port.protocol not in SUPPORTED_PROTOCOLS:
            raise PermanentError(f"port {port.port}: protocol {port.protocol} is not supported")
        listeners.append(
            DesiredListener(
                name=f"{port.name or port.port}-{port.protocol.lower()}",
                protocol=port.protocol,
                port=port.port,
                lb_algorithm=algorithm,
                source_ip_persistence=service.session_affinity == "ClientIP",
                monitor=_monitor(service, port.protocol),
                members=_members(port, endpoints),
                allowed_cidrs=cidrs,
            )
        )
    cluster = settings.cluster_name
    return DesiredLoadBalancer(
        uid=service.uid,
        name=f"kube_{cluster}_{service.namespace}_{service.name}"[:255],
        description=f"Kubernetes Service {service.namespace}/{service.name}"[:255],
        vip_subnet_id=service.annotations.get(names.ANNOTATION_VIP_SUBNET)
        or settings.vip_subnet_id,
        vip_address=_vip_address(service, settings),
        provider=_provider(service, settings),
        flavor_id=service.annotations.get(names.ANNOTATION_FLAVOR),
        tags=(
            names.cluster_tag(cluster),
            names.uid_tag(service.uid),
            names.service_tag(service.namespace, service.name)[:255],
        ),
        listeners=tuple(sorted(listeners, key=lambda item: item.key)),
    )
