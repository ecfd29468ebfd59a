"""Kubernetes objects for the controller's tests, and the controller run against kmock.

kmock (``KubernetesEmulator``) stores what it is sent: it assigns no ``uid`` and no
``resourceVersion``, so the objects built here carry a uid as a real API server would
set one. Collections must be known to kmock before they can be listed, hence
``declare_resources``.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from lbaas.config import KubernetesSettings
from lbaas.integrations.kubernetes.base import Json, OctaviaApi
from lbaas.integrations.kubernetes.controller import Controller
from lbaas.integrations.kubernetes.converge import Converger
from lbaas.integrations.kubernetes.kube_client import LightkubeKube
from lbaas.integrations.kubernetes.kube_config import for_server
from lbaas.integrations.kubernetes.octavia_sdk import SdkOctavia, connect

LOOPBACK_SUBNET = "7f000a00-0000-4000-8000-000000000001"
SERVICES = "v1/services"
SLICES = "discovery.k8s.io/v1/endpointslices"
ENDPOINTS = "v1/endpoints"
EVENTS = "v1/events"
LEASES = "coordination.k8s.io/v1/leases"


async def read(kmock: Any, path: str) -> dict[str, Any] | None:
    """An object as a client GETs it from kmock; None when it is gone."""
    response = await kmock.get(path)
    if response.status == 404:
        return None
    assert response.status == 200, await response.text()
    found: dict[str, Any] = await response.json()
    return found


def declare_resources(kmock: Any) -> None:
    for resource in (SERVICES, SLICES, ENDPOINTS, EVENTS, LEASES):
        kmock.resources[resource] = {}


def service(
    name: str,
    ports: Sequence[tuple[str, int, int | str] | tuple[str, int, int | str, str]] = (
        ("http", 80, 8080),
    ),
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    """A Service; ``ports`` are (name, port, targetPort[, protocol])."""
    port_list = [
        {"name": p[0], "port": p[1], "targetPort": p[2], "protocol": p[3] if len(p) > 3 else "TCP"}
        for p in ports
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
        "spec": {"type": "LoadBalancer", "ports": port_list, **spec},
    }


def endpoint_slice(
    service_name: str,
    addresses: Sequence[str],
    ports: Sequence[tuple[str, int]] = (("http", 8080),),
    namespace: str = "default",
    not_ready: Sequence[str] = (),
    suffix: str = "a",
) -> dict[str, Any]:
    endpoints = [{"addresses": [a], "conditions": {"ready": True}} for a in addresses]
    endpoints += [{"addresses": [a], "conditions": {"ready": False}} for a in not_ready]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service_name}-{suffix}",
            "namespace": namespace,
            "labels": {"kubernetes.io/service-name": service_name},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports],
    }


def settings(**overrides: Any) -> KubernetesSettings:
    base: dict[str, Any] = {
        "vip_subnet_id": LOOPBACK_SUBNET,
        "backoff_base": 0.05,
        "backoff_cap": 1.0,
        "wait_active_timeout": 20.0,
        "resync_interval": 0,
        "cluster_name": f"test-{uuid.uuid4().hex[:8]}",
    }
    return KubernetesSettings.model_validate(base | overrides)


@asynccontextmanager
async def running_controller(
    kube_url: str,
    octavia_url: str,
    kube_settings: KubernetesSettings,
    wrap: Callable[[SdkOctavia], Any] | None = None,
) -> AsyncIterator[Controller]:
    """The controller against kmock and an Octavia endpoint, stopped at the end."""
    octavia = SdkOctavia(connect(None, octavia_url))
    api = wrap(octavia) if wrap else octavia
    converger = Converger(api, wait_timeout=kube_settings.wait_active_timeout)
    kube = LightkubeKube(for_server(kube_url))
    controller = Controller(kube, converger, kube_settings)
    task = asyncio.create_task(controller.run())
    try:
        yield controller
    finally:
        if task.done():
            await kube.aclose()
            task.result()  # the controller died: say why
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await kube.aclose()


async def eventually(condition: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """Poll ``condition`` without blocking the loop: a coroutine function is awaited, a
    plain function (which may call blocking clients) runs in a thread."""
    deadline = time.monotonic() + timeout
    while True:
        if inspect.iscoroutinefunction(condition):
            value = await condition()
        else:
            value = await asyncio.to_thread(condition)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        await asyncio.sleep(0.05)


class CountingOctavia(OctaviaApi):
    """Passes every call to a real ``OctaviaApi`` and records (method, path) — a fake
    given to the controller through its constructor, to count what it writes."""

    def __init__(self, inner: OctaviaApi) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []

    def writes(self, path_part: str = "") -> int:
        return sum(1 for method, path in self.calls if method != "GET" and path_part in path)

    def get(self, path: str, params: Mapping[str, str | list[str]] | None = None) -> Json:
        self.calls.append(("GET", path))
        return self.inner.get(path, params)

    def post(self, path: str, body: Json) -> Json:
        self.calls.append(("POST", path))
        return self.inner.post(path, body)

    def put(self, path: str, body: Json) -> Json:
        self.calls.append(("PUT", path))
        return self.inner.put(path, body)

    def delete(self, path: str, params: Mapping[str, str] | None = None) -> None:
        self.calls.append(("DELETE", path))
        self.inner.delete(path, params)
