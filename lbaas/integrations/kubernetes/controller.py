"""The controller: watches feed the cache and the work queue; the handler converges one
Service at a time against Octavia and writes back what it converged.

Order of a Service's first sync: the finalizer is added before anything exists in
Octavia (so deleting the Service always passes through us), then the load balancer is
converged, then ``status.loadBalancer.ingress`` and the annotations are written. An
event whose Service's desired state has the digest already recorded in its annotations
costs no Octavia call (our own patches come back as such events); resyncs (at start,
after 410, every ``resync_interval``) pass ``force`` and check Octavia anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lbaas.config import KubernetesSettings
from lbaas.errors import PermanentError
from lbaas.integrations.kubernetes import names, patches
from lbaas.integrations.kubernetes.base import Json, KubeApi
from lbaas.integrations.kubernetes.cache import ObjectCache
from lbaas.integrations.kubernetes.converge import Converger
from lbaas.integrations.kubernetes.desired import desired_load_balancer, is_selected
from lbaas.integrations.kubernetes.objects import Service, parse_service
from lbaas.integrations.kubernetes.pipeline import Backoff, WorkQueue
from lbaas.integrations.kubernetes.resync import Resyncer, ResyncParts
from lbaas.integrations.kubernetes.watching import WatchCounters

LOG = logging.getLogger(__name__)
COMPONENT = "lbaas-kubernetes"
T = TypeVar("T")


class Controller:
    def __init__(self, kube: KubeApi, converger: Converger, settings: KubernetesSettings) -> None:
        self.kube = kube
        self.converger = converger
        self.settings = settings
        self.cache = ObjectCache()
        self.backoff = Backoff(settings.backoff_base, settings.backoff_cap)
        self.queue = WorkQueue(self.handle, self.report_permanent, settings.workers, self.backoff)
        self.watch_counters = WatchCounters()
        self.resyncer = Resyncer(
            ResyncParts(
                kube=kube,
                cache=self.cache,
                queue=self.queue,
                settings=settings,
                counters=self.watch_counters,
                backoff=self.backoff,
                sweep_orphans=self._sweep_orphans,
            )
        )
        self.events_posted = 0
        # Octavia calls block (openstacksdk): one thread per worker, not asyncio's default
        # pool (min(32, CPUs + 4) threads, shared with everything else in the process).
        self._threads = ThreadPoolExecutor(settings.workers, thread_name_prefix="octavia")
        # (uid, digest) last converged per key in this process: the echoes of our own
        # patches may come before the watch shows our annotations, and must cost nothing.
        self._converged: dict[str, tuple[str, str]] = {}
        # (uid, what was refused) per key: a permanent refusal is not asked again (nor
        # reported again) until the Service or its endpoints change, or a forced resync.
        self._refused: dict[str, tuple[str, str]] = {}
        self._attempt: dict[str, str] = {}

    async def octavia(self, call: Callable[..., T], *args: Any) -> T:
        """Run a blocking Octavia call on the controller's own threads."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, call, *args)

    async def _sweep_orphans(self, cluster: str, keep: Callable[[Json], bool]) -> list[str]:
        return await self.octavia(self.converger.sweep_orphans, cluster, keep)

    async def run(self) -> None:
        """Until cancelled: endpoints are listed before Services, so that a Service's
        first converge already has its members."""
        try:
            await self._run_tasks()
        finally:
            self._threads.shutdown(wait=False, cancel_futures=True)

    async def _run_tasks(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.queue.run())
            listed = self.resyncer.start_endpoint_watches(group)
            await listed.wait()
            self.resyncer.start_service_watches(group)
            if self.settings.resync_interval > 0:
                group.create_task(self.resyncer.periodic())

    async def handle(self, key: str, force: bool) -> None:
        obj = self.cache.services.get(key)
        if obj is None:
            uid = self.cache.gone_uids.get(key)
            self._refused.pop(key, None)
            if uid:
                await self.octavia(self.converger.release, uid)
                # Forgotten only once released: a retry after an error needs it again.
                if self.cache.gone_uids.get(key) == uid:
                    del self.cache.gone_uids[key]
            return
        service = parse_service(obj)
        if service.deleting or not is_selected(service, self.settings):
            self._refused.pop(key, None)
            await self._release(service)
            return
        try:
            await self._converge(obj, service, force)
        except PermanentError:
            self._refused[key] = (service.uid, self._attempt.pop(key, ""))
            raise

    async def _converge(self, obj: Json, service: Service, force: bool) -> None:
        key = service.key
        # An invalid annotation or port is refused for the Service as written; Octavia
        # refuses the desired load balancer, whichever Service version asked for it.
        if self._refused_before(service, f"service {service.resource_version}", force):
            return
        endpoints = self.cache.ready_endpoints(key, self.settings.endpoints_source)
        desired = desired_load_balancer(service, endpoints, self.settings)
        digest = desired.digest()
        if self._refused_before(service, digest, force):
            return
        if not force and self._already_converged(service, digest):
            return
        if (finalizer := patches.add_finalizer(service)) is not None:
            service = await self._patch(service, finalizer)
        self._converged.pop(key, None)
        state = await self.octavia(self.converger.ensure, desired)
        if self._writes_ingress(service):
            ingress = [{"ip": state.vip_address}]
            if patches.ingress_of(obj) != ingress:
                await self._patch(service, patches.ingress_status(state.vip_address), status=True)
        if (
            record := patches.converged(service, desired.spec_record(), state.record())
        ) is not None:
            await self._patch(service, record)
        self._converged[key] = (service.uid, digest)
        self._refused.pop(key, None)

    def _refused_before(self, service: Service, attempt: str, force: bool) -> bool:
        """Whether ``attempt`` was refused for good; remembered as the one now made."""
        if not force and self._refused.get(service.key) == (service.uid, attempt):
            LOG.debug("%s: refused before as it stands; not asked again", service.key)
            return True
        self._attempt[service.key] = attempt
        return False

    def _already_converged(self, service: Service, digest: str) -> bool:
        if patches.recorded_digest(service) == digest:
            return True
        return self._converged.get(service.key) == (service.uid, digest)

    def _writes_ingress(self, service: Service) -> bool:
        return service.type == "LoadBalancer"

    async def _release(self, service: Service) -> None:
        owned = names.FINALIZER in service.finalizers
        if not owned and names.ANNOTATION_STATE not in service.annotations:
            return
        self._converged.pop(service.key, None)
        await self.octavia(self.converger.release, service.uid)
        obj = self.cache.services.get(service.key) or {}
        if not service.deleting and patches.ingress_of(obj):
            await self._patch(service, patches.ingress_status(None), status=True)
        await self._patch(service, patches.released(service))

    async def _patch(self, service: Service, body: Json, status: bool = False) -> Service:
        updated = await self.kube.patch_service(service.namespace, service.name, body, status)
        if (updated.get("metadata") or {}).get("uid") == service.uid:
            self.cache.services[service.key] = updated
            return parse_service(updated)
        return service

    async def report_permanent(self, key: str, error: PermanentError) -> None:
        """A permanent error becomes a Warning Event on the Service."""
        obj = self.cache.services.get(key)
        if obj is None:
            return
        service = parse_service(obj)
        body = patches.warning_event(
            service, "SyncLoadBalancerFailed", error.user_message, COMPONENT
        )
        try:
            await self.kube.create_event(body)
            self.events_posted += 1
        except Exception:  # noqa: BLE001 - an event is best effort; the error is logged
            LOG.exception("%s: could not record the event", key)
