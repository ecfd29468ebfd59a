"""What the controller writes back to Kubernetes (pure merge-patch builders)."""

from __future__ import annotations

from lbaas.integrations.kubernetes import names, patches
from lbaas.integrations.kubernetes.objects import parse_service
from tests.support import kubernetes as k8s


def test_finalizer_patches_carry_the_whole_list_and_the_resource_version() -> None:
    body = k8s.service("web")
    body["metadata"].update({"finalizers": ["other/keep"], "resourceVersion": "42"})
    service = parse_service(body)
    assert patches.add_finalizer(service) == {
        "metadata": {"finalizers": ["other/keep", names.FINALIZER], "resourceVersion": "42"}
    }
    body["metadata"]["finalizers"].append(names.FINALIZER)
    held = parse_service(body)
    assert patches.add_finalizer(held) is None
    released = patches.released(held)
    assert released["metadata"]["finalizers"] == ["other/keep"]
    assert released["metadata"]["annotations"] == {
        names.ANNOTATION_SPEC: None,
        names.ANNOTATION_STATE: None,
    }


def test_converged_annotations_are_written_once_and_their_digest_read_back() -> None:
    body = k8s.service("web")
    spec = {"digest": "abc", "listeners": []}
    first = patches.converged(parse_service(body), spec, {"load_balancer_id": "x"})
    assert first is not None
    body["metadata"]["annotations"] = first["metadata"]["annotations"]
    again = parse_service(body)
    assert patches.converged(again, spec, {"load_balancer_id": "x"}) is None
    assert patches.recorded_digest(again) == "abc"
    assert patches.ingress_status("127.0.10.5") == {
        "status": {"loadBalancer": {"ingress": [{"ip": "127.0.10.5"}]}}
    }
    assert patches.ingress_status(None) == {"status": {"loadBalancer": {"ingress": []}}}
