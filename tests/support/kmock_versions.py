"""kmock's Kubernetes emulator with the API server's optimistic concurrency added.

kmock 0.8 (``KubernetesEmulator``) answers 409 to the create of a name that exists, but it
assigns no ``resourceVersion`` and applies a PATCH whatever ``resourceVersion`` the patch
carries (it even stores the client's value); PUT on a named object is not served at all
(404). Its reactions (``kmock[...] << ...``) cannot refuse a write either: the emulator
changes its stored object in ``_handle`` before any reaction is consulted. So leader
election, whose safety rests on a 409 for a write based on a stale Lease, could not be
tested against it as it is.

This subclass adds what a real API server does, and nothing to the client: every create
and accepted update gets a fresh ``resourceVersion``; an update (merge patch) whose body
carries a ``metadata.resourceVersion`` other than the stored one is refused with 409
Conflict and changes nothing. The check and the write happen under one lock, so two
writers racing with the same version get one 200 and one 409. Tests pick it through
kmock's own option: ``@pytest.mark.kmock(cls=VersionedKubernetesEmulator)``.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import aiohttp.web
import attrs
import kmock

_VERSIONS = itertools.count(1)
"""resourceVersions only need to be unique and to change: one counter serves every
emulator of the test session."""


@attrs.frozen
class StaleResourceVersion(kmock.KubernetesError):
    status: int = 409
    reason: str = "Conflict"
    message: str = (
        "Operation cannot be fulfilled: the object has been modified; please apply your "
        "changes to the latest version and try again"
    )


class VersionedKubernetesEmulator(kmock.KubernetesEmulator):
    def _write_lock(self) -> asyncio.Lock:
        lock: asyncio.Lock | None = self.__dict__.get("_versions_lock")
        if lock is None:
            lock = self.__dict__["_versions_lock"] = asyncio.Lock()
        return lock

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        writes = (kmock.action.CREATE, kmock.action.UPDATE)
        if request.resource is None or request.action not in writes:
            return await super()._handle(request)
        async with self._write_lock():
            data: Any = request.data
            if isinstance(data, dict):
                metadata = data.setdefault("metadata", {})
                if request.action == kmock.action.UPDATE:
                    self._check_precondition(request, metadata.get("resourceVersion"))
                metadata["resourceVersion"] = str(next(_VERSIONS))
            return await super()._handle(request)

    def _check_precondition(self, request: kmock.Request, wanted: str | None) -> None:
        if wanted is None:
            return
        key = (request.resource, request.namespace, request.name)
        if key not in self.objects:
            return  # kmock answers 404 itself
        stored = self.objects[key]
        if stored.deleted:
            return
        if (stored.get("metadata") or {}).get("resourceVersion") != wanted:
            raise StaleResourceVersion()
