"""The controller's in-memory copy of Services, EndpointSlices and Endpoints (pure).

Watch events and relists update it and answer which Service keys need another look; the
handler reads the newest objects from here when it runs, which is what makes the
pipeline level-triggered and coalescing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from lbaas.integrations.kubernetes.base import Json
from lbaas.integrations.kubernetes.objects import (
    Endpoint,
    object_key,
    ready_endpoints_of_legacy,
    ready_endpoints_of_slice,
    slice_service_name,
)
from lbaas.model.enums import WatchEventType

DELETED = WatchEventType.DELETED


class ObjectCache:
    def __init__(self) -> None:
        self.services: dict[str, Json] = {}
        self.gone_uids: dict[str, str] = {}
        self.slices: dict[str, Json] = {}
        self.slices_by_service: dict[str, set[str]] = defaultdict(set)
        self.endpoints: dict[str, Json] = {}

    # Services

    def apply_service(self, event_type: str, obj: Json) -> str:
        key = object_key(obj)
        if event_type == DELETED:
            gone = self.services.pop(key, obj)
            uid = (gone.get("metadata") or {}).get("uid")
            if uid:
                self.gone_uids[key] = str(uid)
        else:
            self.services[key] = obj
            self.gone_uids.pop(key, None)
        return key

    def replace_services(self, items: Iterable[Json], namespace: str | None) -> set[str]:
        """A relist of one watched scope: Services that vanished meanwhile count as
        deleted. Returns every key of the scope, old and new."""
        fresh = {object_key(obj): obj for obj in items}
        scope = [key for key in self.services if _in_scope(key, namespace)]
        for key in scope:
            if key not in fresh:
                self.apply_service(DELETED, self.services[key])
        for obj in fresh.values():
            self.apply_service(WatchEventType.ADDED, obj)
        return set(scope) | set(fresh)

    def live_uids(self) -> set[str]:
        return {str((s.get("metadata") or {}).get("uid")) for s in self.services.values()}

    # EndpointSlices

    def apply_slice(self, event_type: str, obj: Json) -> str | None:
        key = object_key(obj)
        old = self.slices.pop(key, None)
        service = _slice_service_key(obj) or (_slice_service_key(old) if old else None)
        if old is not None and (old_service := _slice_service_key(old)):
            self.slices_by_service[old_service].discard(key)
        if event_type != DELETED:
            self.slices[key] = obj
            if (new_service := _slice_service_key(obj)) is not None:
                self.slices_by_service[new_service].add(key)
        return service

    def replace_slices(self, items: Iterable[Json], namespace: str | None) -> set[str]:
        touched: set[str] = set()
        fresh = {object_key(obj): obj for obj in items}
        for key in [k for k in self.slices if _in_scope(k, namespace) and k not in fresh]:
            if service := self.apply_slice(DELETED, self.slices[key]):
                touched.add(service)
        for obj in fresh.values():
            if service := self.apply_slice(WatchEventType.ADDED, obj):
                touched.add(service)
        return touched

    # Legacy Endpoints

    def apply_endpoints(self, event_type: str, obj: Json) -> str:
        key = object_key(obj)
        if event_type == DELETED:
            self.endpoints.pop(key, None)
        else:
            self.endpoints[key] = obj
        return key

    def replace_endpoints(self, items: Iterable[Json], namespace: str | None) -> set[str]:
        fresh = {object_key(obj): obj for obj in items}
        gone = [k for k in self.endpoints if _in_scope(k, namespace) and k not in fresh]
        for key in gone:
            self.endpoints.pop(key)
        self.endpoints.update(fresh)
        return set(gone) | set(fresh)

    def ready_endpoints(self, service_key: str, source: str) -> list[Endpoint]:
        """Slices when the Service has any (or ``source`` says slices), else legacy."""
        slice_keys = self.slices_by_service.get(service_key) or set()
        if source == "slices" or (source == "auto" and slice_keys):
            found: list[Endpoint] = []
            for key in sorted(slice_keys):
                found.extend(ready_endpoints_of_slice(self.slices[key]))
            return found
        legacy = self.endpoints.get(service_key)
        return ready_endpoints_of_legacy(legacy) if legacy else []


def _in_scope(key: str, namespace: str | None) -> bool:
    return namespace is None or key.startswith(f"{namespace}/")


def _slice_service_key(obj: Json) -> str | None:
    name = slice_service_name(obj)
    if name is None:
        return None
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    return f"{namespace}/{name}"
