"""The controller's watches, relists and resyncs.

A relist (at start, after 410 Gone, after a broken watch) replaces its scope of the cache,
queues every Service of that scope with ``force`` (a check against Octavia, not only the
recorded digest) and, for Services, sweeps orphans: load balancers tagged with this
cluster whose Service UID is not among the Services the controller knows. The snapshot of
known UIDs is taken after Octavia is listed, so a load balancer made for a Service that
arrived meanwhile is never taken for an orphan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from lbaas.config import KubernetesSettings
from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.base import Collection, Json, Kind, KubeApi
from lbaas.integrations.kubernetes.cache import ObjectCache
from lbaas.integrations.kubernetes.pipeline import Backoff, WorkQueue
from lbaas.integrations.kubernetes.watching import WatchCounters, list_and_watch

LOG = logging.getLogger(__name__)

OrphanSweep = Callable[[str, Callable[[Json], bool]], Awaitable[list[str]]]
"""``sweep(cluster, keep)``: remove the cluster's load balancers ``keep`` does not claim;
the ids removed (the controller runs ``Converger.sweep_orphans`` on its Octavia threads)."""


def collections(kind: Kind, namespaces: tuple[str, ...]) -> list[Collection]:
    """One collection per watched namespace, or one of every namespace."""
    if not namespaces:
        return [Collection(kind)]
    return [Collection(kind, ns) for ns in namespaces]


@dataclass(frozen=True)
class ResyncParts:
    """What the watches share with the controller that builds them (given, not reached
    through the controller, so that this module does not import it)."""

    kube: KubeApi
    cache: ObjectCache
    queue: WorkQueue
    settings: KubernetesSettings
    counters: WatchCounters
    backoff: Backoff
    sweep_orphans: OrphanSweep


class Resyncer:
    def __init__(self, parts: ResyncParts) -> None:
        self._parts = parts
        self._cache = parts.cache
        self._settings = parts.settings
        self.orphans_removed: list[str] = []

    def _enqueue(self, keys: set[str], force: bool) -> None:
        for key in sorted(keys):
            self._parts.queue.enqueue(key, force)

    def start_endpoint_watches(self, group: asyncio.TaskGroup) -> asyncio.Event:
        """Start the EndpointSlice/Endpoints watches; the event is set once each listed."""
        settings = self._settings
        source = settings.endpoints_source
        scopes: list[Collection] = []
        if source in ("auto", "slices"):
            scopes += collections(Kind.ENDPOINT_SLICES, settings.namespaces)
        if source in ("auto", "endpoints"):
            scopes += collections(Kind.ENDPOINTS, settings.namespaces)
        listed = asyncio.Event()
        remaining = set(scopes)
        for collection in scopes:
            group.create_task(self._endpoint_watch(collection, remaining, listed))
        if not scopes:
            listed.set()
        return listed

    async def _endpoint_watch(
        self, collection: Collection, remaining: set[Collection], listed: asyncio.Event
    ) -> None:
        cache = self._cache
        slices = collection.kind == Kind.ENDPOINT_SLICES
        namespace = collection.namespace

        async def on_relist(items: list[Json]) -> None:
            if slices:
                self._enqueue(cache.replace_slices(items, namespace), force=False)
            else:
                self._enqueue(cache.replace_endpoints(items, namespace), force=False)
            remaining.discard(collection)
            if not remaining:
                listed.set()

        def on_event(event_type: str, obj: Json) -> None:
            if slices:
                key = cache.apply_slice(event_type, obj)
            else:
                key = cache.apply_endpoints(event_type, obj)
            if key is not None:
                self._parts.queue.enqueue(key, delay=self._settings.endpoint_batch_delay)

        await self._list_and_watch(collection, on_relist, on_event)

    async def _list_and_watch(
        self,
        collection: Collection,
        on_relist: Callable[[list[Json]], Awaitable[None]],
        on_event: Callable[[str, Json], None],
    ) -> None:
        parts = self._parts
        await list_and_watch(
            parts.kube, collection, on_relist, on_event, parts.counters, parts.backoff
        )

    def start_service_watches(self, group: asyncio.TaskGroup) -> None:
        for collection in collections(Kind.SERVICES, self._settings.namespaces):
            group.create_task(self._service_watch(collection))

    async def _service_watch(self, collection: Collection) -> None:
        cache = self._cache
        namespace = collection.namespace

        async def on_relist(items: list[Json]) -> None:
            self._enqueue(cache.replace_services(items, namespace), force=True)
            await self.sweep(namespace)

        def on_event(event_type: str, obj: Json) -> None:
            self._parts.queue.enqueue(cache.apply_service(event_type, obj))

        await self._list_and_watch(collection, on_relist, on_event)

    async def sweep(self, namespace: str | None) -> None:
        """Remove orphans of this scope; errors are logged (the next resync retries)."""
        settings = self._settings

        def keep(lb: Json) -> bool:
            tags = list(lb.get("tags") or ())
            owner = next(
                (t[len(names.TAG_SERVICE) :] for t in tags if t.startswith(names.TAG_SERVICE)), ""
            )
            lb_namespace = owner.partition(".")[0]
            if namespace is not None and lb_namespace != namespace:
                return True
            if settings.namespaces and lb_namespace not in settings.namespaces:
                return True
            uid = next((t[len(names.TAG_UID) :] for t in tags if t.startswith(names.TAG_UID)), None)
            return uid is not None and (uid in self._cache.live_uids() or self._pending(uid))

        try:
            removed = await self._parts.sweep_orphans(settings.cluster_name, keep)
        except Exception:  # noqa: BLE001 - the sweep is repeated at every resync
            LOG.exception("orphan sweep failed")
            return
        self.orphans_removed.extend(removed)

    def _pending(self, uid: str) -> bool:
        """A Service deleted outright whose release is still queued is not an orphan
        for the sweep to race with."""
        return uid in self._cache.gone_uids.values()

    async def periodic(self) -> None:
        interval = self._settings.resync_interval
        while True:
            await asyncio.sleep(interval)
            self._enqueue(set(self._cache.services), force=True)
            await self.sweep(None)
