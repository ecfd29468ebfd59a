"""Service + endpoints → desired load balancer, and which Services are ours (pure)."""

from __future__ import annotations

import pytest

from lbaas.errors import PermanentError
from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.desired import desired_load_balancer, is_selected
from lbaas.integrations.kubernetes.objects import (
    parse_service,
    ready_endpoints_of_legacy,
    ready_endpoints_of_slice,
)
from tests.support import kubernetes as k8s


def test_one_listener_per_port_and_members_per_ready_endpoint_and_target_port() -> None:
    svc = parse_service(k8s.service("web", ports=[("http", 80, "web"), ("metrics", 9100, 9100)]))
    slice_ = k8s.endpoint_slice(
        "web",
        ["10.1.0.1", "10.1.0.2"],
        ports=[("http", 8080), ("metrics", 9100)],
        not_ready=["10.1.0.9"],
    )
    desired = desired_load_balancer(svc, ready_endpoints_of_slice(slice_), k8s.settings())
    by_port = {listener.port: listener for listener in desired.listeners}
    assert set(by_port) == {80, 9100}
    assert [(m.address, m.protocol_port) for m in by_port[80].members] == [
        ("10.1.0.1", 8080),
        ("10.1.0.2", 8080),
    ]
    assert [(m.address, m.protocol_port) for m in by_port[9100].members] == [
        ("10.1.0.1", 9100),
        ("10.1.0.2", 9100),
    ]
    assert names.uid_tag(svc.uid) in desired.tags
    assert by_port[80].monitor is not None and by_port[80].monitor.type == "TCP"
    assert not by_port[80].source_ip_persistence


def test_legacy_endpoints_skip_not_ready_addresses() -> None:
    legacy = {
        "metadata": {"name": "web", "namespace": "default"},
        "subsets": [
            {
                "addresses": [{"ip": "10.2.0.1"}],
                "notReadyAddresses": [{"ip": "10.2.0.2"}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            }
        ],
    }
    svc = parse_service(k8s.service("web"))
    desired = desired_load_balancer(svc, ready_endpoints_of_legacy(legacy), k8s.settings())
    assert [(m.address, m.protocol_port) for m in desired.listeners[0].members] == [
        ("10.2.0.1", 8080)
    ]


def test_affinity_monitor_annotation_vip_and_class_choices() -> None:
    body = k8s.service(
        "web",
        ports=[("dns", 53, 53, "UDP")],
        sessionAffinity="ClientIP",
        loadBalancerIP="127.0.10.77",
        loadBalancerClass="lbaas.openstack.org/amphora",
    )
    body["metadata"]["annotations"] = {
        names.ANNOTATION_HEALTH_MONITOR: "HTTP:/healthz",
        names.ANNOTATION_FLAVOR: "f1",
    }
    desired = desired_load_balancer(parse_service(body), [], k8s.settings())
    listener = desired.listeners[0]
    assert listener.source_ip_persistence
    assert listener.monitor is not None and listener.monitor.type == "UDP-CONNECT"
    assert (desired.vip_address, desired.provider, desired.flavor_id) == (
        "127.0.10.77",
        "amphora",
        "f1",
    )
    body["metadata"]["annotations"] = {names.ANNOTATION_HEALTH_MONITOR: "none"}
    assert (
        desired_load_balancer(parse_service(body), [], k8s.settings()).listeners[0].monitor is None
    )


def test_sctp_and_unknown_annotations_are_permanent_errors() -> None:
    with pytest.raises(PermanentError, match="SCTP"):
        desired_load_balancer(
            parse_service(k8s.service("s", ports=[("x", 9, 9, "SCTP")])), [], k8s.settings()
        )
    body = k8s.service("s")
    body["metadata"]["annotations"] = {names.ANNOTATION_ALGORITHM: "RANDOM"}
    with pytest.raises(PermanentError, match="RANDOM"):
        desired_load_balancer(parse_service(body), [], k8s.settings())


@pytest.mark.parametrize(
    ("spec", "overrides", "selected"),
    [
        ({}, {}, True),
        ({"loadBalancerClass": "lbaas.openstack.org/amphora"}, {}, True),
        ({"loadBalancerClass": "example.com/other"}, {}, False),
        ({}, {"claim_unclassed": False}, False),
        ({"type": "ClusterIP", "clusterIP": "10.0.0.1"}, {}, False),
        ({"type": "ClusterIP", "clusterIP": "10.0.0.1"}, {"mode": "clusterip"}, True),
        ({"type": "ClusterIP", "clusterIP": "None"}, {"mode": "clusterip"}, False),
        ({}, {"namespaces": ["other"]}, False),
        ({}, {"exclude_namespaces": ["default"]}, False),
        ({}, {"require_annotation": True}, False),
    ],
)
def test_selection(spec: dict[str, str], overrides: dict[str, object], selected: bool) -> None:
    svc = parse_service(k8s.service("web", **spec))
    assert is_selected(svc, k8s.settings(**overrides)) is selected


def test_clusterip_mode_uses_the_cluster_ip_as_vip_and_digest_follows_members() -> None:
    svc = parse_service(k8s.service("web", type="ClusterIP", clusterIP="10.0.0.9"))
    settings = k8s.settings(mode="clusterip")
    one = desired_load_balancer(
        svc, ready_endpoints_of_slice(k8s.endpoint_slice("web", ["10.1.0.1"])), settings
    )
    two = desired_load_balancer(
        svc, ready_endpoints_of_slice(k8s.endpoint_slice("web", ["10.1.0.1", "10.1.0.2"])), settings
    )
    assert one.vip_address == "10.0.0.9"
    assert one.digest() != two.digest()
    assert one.spec_record()["listeners"][0]["member_count"] == 1  # type: ignore[index]
