"""The names this controller writes on Kubernetes objects and Octavia objects."""

from __future__ import annotations

DOMAIN = "lbaas.openstack.org"

FINALIZER = f"{DOMAIN}/load-balancer"
"""Held on every Service that has (or may have) a load balancer, until it is released."""

ANNOTATION_SPEC = f"{DOMAIN}/converged-spec"
"""JSON: the desired state last converged (listeners, pools, a digest of the members)."""

ANNOTATION_STATE = f"{DOMAIN}/converged-state"
"""JSON: the Octavia objects that hold it (ids, VIP, member count)."""

ANNOTATION_ENABLED = f"{DOMAIN}/enabled"
"""``"true"`` selects a Service when ``kubernetes.require_annotation`` is set."""

ANNOTATION_PROVIDER = f"{DOMAIN}/provider"
ANNOTATION_FLAVOR = f"{DOMAIN}/flavor-id"
ANNOTATION_VIP_SUBNET = f"{DOMAIN}/vip-subnet-id"
ANNOTATION_VIP_ADDRESS = f"{DOMAIN}/vip-address"
ANNOTATION_ALGORITHM = f"{DOMAIN}/lb-algorithm"
ANNOTATION_HEALTH_MONITOR = f"{DOMAIN}/health-monitor"
"""``none``, ``TCP``, ``UDP-CONNECT``, ``HTTP`` or ``HTTP:/path``; TCP (UDP-CONNECT for UDP
ports) when absent."""

ANNOTATION_SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"
"""Kubernetes' comma-separated source ranges, read when ``spec.loadBalancerSourceRanges``
is empty (that field wins when both are set)."""

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
"""The label an EndpointSlice names its Service with."""

TAG_CLUSTER = "kube-cluster="
TAG_UID = "kube-uid="
TAG_SERVICE = "kube-service="


def cluster_tag(cluster: str) -> str:
    return f"{TAG_CLUSTER}{cluster}"


def uid_tag(uid: str) -> str:
    return f"{TAG_UID}{uid}"


def service_tag(namespace: str, name: str) -> str:
    return f"{TAG_SERVICE}{namespace}.{name}"
