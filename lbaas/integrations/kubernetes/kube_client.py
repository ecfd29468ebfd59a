"""``KubeApi`` over lightkube's asynchronous client (typed resources; objects are handed
to the core as plain dicts, ``to_dict()``).

lightkube's watch re-watches by itself, from the last resourceVersion it saw, when the
server ends a stream; a 410 Gone (an HTTP status or an ERROR event carrying a Status
with code 410) becomes ``WatchExpired`` so the caller relists. Its errors are mapped to
lbaas's: 409, 429 and 5xx and a broken connection are temporary, other refusals
permanent. lightkube 1.0.1's ``watch()`` takes no ``allowWatchBookmarks``, so none are
asked for: a quiet collection's re-watch may meet 410 and relist (one more list; the
relist is what restores correctness either way).

Leases (leader election) are written with JSON merge patches carrying
``metadata.resourceVersion``: the API server takes a resourceVersion in a patch as a
precondition and answers 409 when the Lease has changed since, which is the optimistic
concurrency client-go gets from a PUT.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, NoReturn, cast

import httpx2
from lightkube import AsyncClient
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ApiError, NotReadyError
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Endpoints, Event, Service
from lightkube.resources.discovery_v1 import EndpointSlice
from lightkube.types import PatchType

from lbaas.errors import PermanentError, TemporaryError
from lbaas.integrations.kubernetes.base import (
    Collection,
    Conflict,
    Json,
    Kind,
    KubeApi,
    LeaseApi,
    WatchExpired,
)

WATCH_TIMEOUT_SECONDS = 300
"""Asked of the server per watch (it ends the stream then and lightkube watches again)."""
ALL_NAMESPACES = "*"
RESOURCES: dict[Kind, Any] = {
    Kind.SERVICES: Service,
    Kind.ENDPOINT_SLICES: EndpointSlice,
    Kind.ENDPOINTS: Endpoints,
}


def _raise_mapped(exc: httpx2.HTTPError, what: str) -> NoReturn:
    if isinstance(exc, ApiError):
        status = exc.status.code or 0
        detail = f"{what}: {status} {exc.status.message or ''}"
    elif isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        detail = f"{what}: {status}"
    else:
        raise TemporaryError(f"Kubernetes API unreachable ({what}): {exc!r}") from exc
    if status == 410:
        raise WatchExpired(detail) from exc
    if status == 409:
        raise Conflict(detail, delay=0.5) from exc
    if status == 429 or status >= 500:
        raise TemporaryError(detail, delay=0.5) from exc
    raise PermanentError(detail) from exc


class LightkubeKube(KubeApi, LeaseApi):
    def __init__(self, config: SingleConfig) -> None:
        self._client = AsyncClient(config, timeout=httpx2.Timeout(30.0))

    async def list(self, collection: Collection) -> tuple[list[Json], str | None]:
        listing = self._client.list(
            RESOURCES[collection.kind], namespace=collection.namespace or ALL_NAMESPACES
        )
        try:
            items = [obj.to_dict() async for obj in listing]
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"list {collection}")
        try:
            version: str | None = listing.resourceVersion
        except NotReadyError:
            version = None  # the server sent none
        return items, version

    async def watch(
        self, collection: Collection, resource_version: str | None
    ) -> AsyncIterator[Json]:
        events = self._client.watch(
            RESOURCES[collection.kind],
            namespace=collection.namespace or ALL_NAMESPACES,
            server_timeout=WATCH_TIMEOUT_SECONDS,
            resource_version=resource_version,
        )
        try:
            async for event_type, obj in events:
                yield {"type": event_type, "object": obj.to_dict()}
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"watch {collection}")

    async def patch_service(
        self, namespace: str, name: str, body: Json, status: bool = False
    ) -> Json:
        merge = PatchType.MERGE
        try:
            if status:
                patched_status = await self._client.patch(
                    Service.Status, name, body, namespace=namespace, patch_type=merge
                )
                result: Json = patched_status.to_dict()
            else:
                patched = await self._client.patch(
                    Service, name, body, namespace=namespace, patch_type=merge
                )
                result = patched.to_dict()
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"patch service {namespace}/{name}")
        return result

    async def create_event(self, body: Json) -> Json:
        event = cast(Event, Event.from_dict(body))
        try:
            created = await self._client.create(event)
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"create event {event.metadata and event.metadata.name}")
        result: Json = created.to_dict()
        return result

    async def get_lease(self, namespace: str, name: str) -> Json | None:
        try:
            lease = await self._client.get(Lease, name, namespace=namespace)
        except httpx2.HTTPStatusError as exc:
            if exc.response.status_code == 404:
                return None
            _raise_mapped(exc, f"get lease {namespace}/{name}")
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"get lease {namespace}/{name}")
        found: Json = lease.to_dict()
        return found

    async def create_lease(self, body: Json) -> Json:
        lease = cast(Lease, Lease.from_dict(body))
        try:
            created = await self._client.create(lease)
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"create lease {lease.metadata and lease.metadata.name}")
        result: Json = created.to_dict()
        return result

    async def update_lease(self, namespace: str, name: str, body: Json) -> Json:
        try:
            patched = await self._client.patch(
                Lease, name, body, namespace=namespace, patch_type=PatchType.MERGE
            )
        except httpx2.HTTPError as exc:
            _raise_mapped(exc, f"update lease {namespace}/{name}")
        result: Json = patched.to_dict()
        return result

    async def aclose(self) -> None:
        await self._client.close()
