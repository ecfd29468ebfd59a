"""What the controller writes on Kubernetes objects (pure builders of merge patches).

Merge patches replace lists whole, so finalizer patches carry the complete new list and
the object's resourceVersion: a real API server then refuses (409) a patch built from a
stale read instead of dropping someone else's finalizer, and the pipeline retries.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.base import Json
from lbaas.integrations.kubernetes.objects import Service


def _metadata(service: Service, fields: Json) -> Json:
    meta = dict(fields)
    if service.resource_version:
        meta["resourceVersion"] = service.resource_version
    return {"metadata": meta}


def add_finalizer(service: Service) -> Json | None:
    if names.FINALIZER in service.finalizers:
        return None
    return _metadata(service, {"finalizers": [*service.finalizers, names.FINALIZER]})


def converged(service: Service, spec: Json, state: Json) -> Json | None:
    """Annotations recording what was converged; None when they already say so."""
    spec_text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    state_text = json.dumps(state, sort_keys=True, separators=(",", ":"))
    if (
        service.annotations.get(names.ANNOTATION_SPEC) == spec_text
        and service.annotations.get(names.ANNOTATION_STATE) == state_text
    ):
        return None
    return {
        "metadata": {
            "annotations": {names.ANNOTATION_SPEC: spec_text, names.ANNOTATION_STATE: state_text}
        }
    }


def recorded_digest(service: Service) -> str | None:
    """The digest of the desired state last converged, from the spec annotation."""
    raw = service.annotations.get(names.ANNOTATION_SPEC)
    if not raw or names.ANNOTATION_STATE not in service.annotations:
        return None
    try:
        digest = json.loads(raw).get("digest")
    except (ValueError, AttributeError):
        return None
    return str(digest) if digest else None


def released(service: Service) -> Json:
    """Drop our annotations and finalizer once the load balancer is gone."""
    patch = _metadata(
        service,
        {
            "annotations": {names.ANNOTATION_SPEC: None, names.ANNOTATION_STATE: None},
            "finalizers": [f for f in service.finalizers if f != names.FINALIZER],
        },
    )
    return patch


def ingress_status(vip_address: str | None) -> Json:
    """``status.loadBalancer`` for the ``/status`` subresource (empty: no ingress)."""
    ingress = [{"ip": vip_address}] if vip_address else []
    return {"status": {"loadBalancer": {"ingress": ingress}}}


def ingress_of(obj: Json) -> list[Json]:
    status = obj.get("status") or {}
    return list((status.get("loadBalancer") or {}).get("ingress") or [])


def warning_event(service: Service, reason: str, message: str, component: str) -> Json:
    """A core/v1 Event on the Service (what ``kubectl describe service`` shows)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{service.name}.{uuid.uuid4().hex[:16]}",
            "namespace": service.namespace,
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Service",
            "namespace": service.namespace,
            "name": service.name,
            "uid": service.uid,
        },
        "reason": reason,
        "message": message[:1024],
        "type": "Warning",
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
