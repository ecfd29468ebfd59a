"""``OctaviaApi`` over openstacksdk's load-balancer proxy.

openstacksdk supplies what a real cloud needs — clouds.yaml, Keystone authentication and
token renewal, the service catalog and Octavia's version discovery — and its proxy is a
keystoneauth adapter, so the controller sends the v2 API's JSON through it unchanged
(the batch member update has no resource method in the SDK). Against lbaas without
Keystone, ``octavia_endpoint`` gives ``auth_type=none`` with that endpoint.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from lbaas.errors import ConfigError, PermanentError, TemporaryError
from lbaas.integrations.kubernetes.base import Json, OctaviaApi, OctaviaNotFound

RETRYABLE_STATUSES = frozenset({409, 429, 500, 502, 503, 504})


def connect(cloud: str | None, endpoint: str | None) -> Any:
    """An openstacksdk connection from a clouds.yaml entry or a bare endpoint."""
    import openstack

    if endpoint:
        return openstack.connect(
            auth_type="none", auth={"endpoint": endpoint}, load_balancer_api_version="2"
        )
    if cloud:
        return openstack.connect(cloud=cloud, load_balancer_api_version="2")
    raise ConfigError("kubernetes.octavia_cloud or kubernetes.octavia_endpoint must be set")


class SdkOctavia(OctaviaApi):
    """Counts the calls it makes by method and status (``calls``) for benchmarks."""

    def __init__(self, connection: Any) -> None:
        self._proxy = connection.load_balancer
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        from keystoneauth1 import exceptions as ksa

        try:
            response = self._proxy.request(path, method, raise_exc=False, **kwargs)
        except ksa.ConnectionError as exc:
            self._count(method, "connection-error")
            raise TemporaryError(f"Octavia API unreachable: {type(exc).__name__}") from exc
        self._count(method, str(response.status_code))
        status = int(response.status_code)
        if status < 300:
            return response.json() if response.content else None
        detail = f"{method} {path}: {status} {response.text[:300]}"
        if status == 404:
            raise OctaviaNotFound(detail)
        if status in RETRYABLE_STATUSES:
            raise TemporaryError(detail, delay=0.5)
        raise PermanentError(detail)

    def _count(self, method: str, outcome: str) -> None:
        with self._lock:
            self.calls[f"{method} {outcome}"] += 1

    def get(self, path: str, params: Mapping[str, str | list[str]] | None = None) -> Json:
        result: Json = self._call("GET", path, params=dict(params or {}))
        return result

    def post(self, path: str, body: Json) -> Json:
        result: Json = self._call("POST", path, json=body)
        return result

    def put(self, path: str, body: Json) -> Json:
        result: Json = self._call("PUT", path, json=body) or {}
        return result

    def delete(self, path: str, params: Mapping[str, str] | None = None) -> None:
        self._call("DELETE", path, params=dict(params or {}))
