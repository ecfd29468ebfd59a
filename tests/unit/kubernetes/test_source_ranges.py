"""A Service's source ranges → every listener's allowed_cidrs, from YAML fixtures (each
file under fixtures/source_ranges is a Service manifest and what it must become), and the
Octavia bodies and comparison that carry a change of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lbaas.errors import PermanentError
from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.desired import desired_load_balancer
from lbaas.integrations.kubernetes.objects import parse_service
from lbaas.integrations.kubernetes.octavia_bodies import (
    listener_body,
    listener_differs,
    listener_options,
    load_balancer_body,
)
from tests.support import kubernetes as k8s

FIXTURES = Path(__file__).parent / "fixtures" / "source_ranges"
CASES = sorted(FIXTURES.glob("*.yaml"))


def _load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = yaml.safe_load(path.read_text())
    return case


def test_the_fixture_directory_holds_the_cases() -> None:
    assert len(CASES) >= 8
    assert all(("allowed_cidrs" in _load(p)) != ("error" in _load(p)) for p in CASES)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_service_manifest_to_allowed_cidrs(path: Path) -> None:
    case = _load(path)
    service = parse_service(case["service"])
    if "error" in case:
        with pytest.raises(PermanentError) as refused:
            desired_load_balancer(service, [], k8s.settings())
        assert case["error"] in refused.value.user_message
        return
    desired = desired_load_balancer(service, [], k8s.settings())
    assert desired.listeners
    for listener in desired.listeners:
        assert list(listener.allowed_cidrs) == case["allowed_cidrs"]


def _desired(ranges: list[str] | None = None, annotation: str | None = None) -> Any:
    body = k8s.service("web", ports=[("http", 80, 8080), ("dns", 53, 53, "UDP")])
    body["metadata"]["uid"] = "5d1c1b1e-0000-4000-8000-0000000000aa"
    if ranges is not None:
        body["spec"]["loadBalancerSourceRanges"] = ranges
    if annotation is not None:
        body["metadata"]["annotations"] = {names.ANNOTATION_SOURCE_RANGES: annotation}
    return desired_load_balancer(parse_service(body), [], k8s.settings(cluster_name="c"))


def test_a_change_of_ranges_changes_the_digest_but_not_their_spelling() -> None:
    base = _desired()
    narrowed = _desired(["10.0.0.0/8"])
    assert base.digest() != narrowed.digest()
    same = _desired(annotation="10.9.9.9/8, 10.0.0.0/8")
    assert same.digest() == narrowed.digest()


def test_the_spec_record_counts_ranges_instead_of_listing_them() -> None:
    many = [f"10.{i // 256}.{i % 256}.0/24" for i in range(2000)]
    record = _desired(many).spec_record()
    listeners: Any = record["listeners"]
    assert [item["allowed_cidr_count"] for item in listeners] == [2000, 2000]
    assert all("allowed_cidrs" not in item for item in listeners)


def test_bodies_carry_the_networks_and_a_clear_is_null() -> None:
    filtered = _desired(["192.0.2.0/24"])
    open_ = _desired()
    tcp = next(item for item in filtered.listeners if item.protocol == "TCP")
    assert listener_body(tcp, ())["allowed_cidrs"] == ["192.0.2.0/24"]
    assert "allowed_cidrs" not in listener_body(open_.listeners[0], ())
    graph = load_balancer_body(filtered, None)
    assert [item["allowed_cidrs"] for item in graph["listeners"]] == [["192.0.2.0/24"]] * 2
    assert listener_options(tcp) == {"allowed_cidrs": ["192.0.2.0/24"]}
    assert listener_options(open_.listeners[0]) == {"allowed_cidrs": None}


def test_listener_differs_compares_networks_as_sets() -> None:
    two = _desired(["192.0.2.0/24", "10.0.0.0/8"]).listeners[0]
    assert not listener_differs(two, {"allowed_cidrs": ["192.0.2.0/24", "10.0.0.0/8"]})
    assert listener_differs(two, {"allowed_cidrs": ["192.0.2.0/24"]})
    assert listener_differs(two, {"allowed_cidrs": None})
    assert not listener_differs(_desired().listeners[0], {"allowed_cidrs": None})
    assert listener_differs(_desired().listeners[0], {"allowed_cidrs": ["10.0.0.0/8"]})
