"""One Lease kept in memory as the API server keeps it (a fresh resourceVersion per write,
409 for a create of an existing Lease or a write carrying a stale version), for the
election's unit tests: the pure state machine drives ``LeaseStore`` directly, the
elector's loop goes through ``StoreLeases``, a ``LeaseApi`` given to its constructor."""

from __future__ import annotations

import copy
import itertools

from lbaas.errors import TemporaryError
from lbaas.integrations.kubernetes.base import Conflict, Json, LeaseApi
from lbaas.integrations.kubernetes.election import Action


class LeaseStore:
    """One Lease, kept as the API server keeps it."""

    def __init__(self) -> None:
        self.lease: Json | None = None
        self._versions = itertools.count(1)

    def read(self) -> Json | None:
        return copy.deepcopy(self.lease)

    def write(self, action: Action, body: Json) -> Json:
        if action is Action.CREATE:
            if self.lease is not None:
                raise Conflict("exists")
            self.lease = copy.deepcopy(body)
        else:
            assert self.lease is not None
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted != self.lease["metadata"]["resourceVersion"]:
                raise Conflict("stale")
            self.lease["spec"].update(body["spec"])
        self.lease["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(self.lease)


class StoreLeases(LeaseApi):
    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.severed = False

    def _check(self) -> None:
        if self.severed:
            raise TemporaryError("unreachable")

    async def get_lease(self, namespace: str, name: str) -> Json | None:
        self._check()
        return self.store.read()

    async def create_lease(self, body: Json) -> Json:
        self._check()
        return self.store.write(Action.CREATE, body)

    async def update_lease(self, namespace: str, name: str, body: Json) -> Json:
        self._check()
        return self.store.write(Action.RENEW, body)
