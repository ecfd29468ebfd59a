"""The interfaces the controller's core is given: the Octavia v2 API, the Kubernetes API
and, apart, the Lease calls of leader election. Implementations: ``octavia_sdk`` and
``kube_client`` (lightkube); tests pass in the same implementations pointed at lbaas and
kmock (or wrappers of them that count calls, or cut them). Objects cross both as plain JSON dicts, which is what the pure core reads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lbaas.errors import LbaasError, PermanentError, TemporaryError

Json = dict[str, Any]


class OctaviaNotFound(PermanentError):
    """404 from the Octavia API: the object is gone (often what a caller wanted)."""


class Conflict(TemporaryError):
    """409 from the Kubernetes API: the name exists already (create), or the object
    changed since the ``resourceVersion`` the write carried (optimistic concurrency)."""


class WatchExpired(LbaasError):
    """The API server answered 410 Gone: the resourceVersion is too old; relist."""


class OctaviaApi(ABC):
    """The Octavia v2 API under ``/v2/lbaas`` as JSON requests.

    Every method raises ``lbaas.errors.TemporaryError`` for what retrying fixes (409
    while a load balancer is PENDING_*, 5xx, connection errors), ``OctaviaNotFound`` for
    404 and ``PermanentError`` for any other refusal.
    """

    @abstractmethod
    def get(self, path: str, params: Mapping[str, str | list[str]] | None = None) -> Json: ...

    @abstractmethod
    def post(self, path: str, body: Json) -> Json: ...

    @abstractmethod
    def put(self, path: str, body: Json) -> Json: ...

    @abstractmethod
    def delete(self, path: str, params: Mapping[str, str] | None = None) -> None: ...


class Kind(StrEnum):
    """The collections the controller lists and watches."""

    SERVICES = "services"
    ENDPOINT_SLICES = "endpointslices"
    ENDPOINTS = "endpoints"


@dataclass(frozen=True)
class Collection:
    kind: Kind
    namespace: str | None = None
    """None: every namespace."""

    def __str__(self) -> str:
        return f"{self.kind} in {self.namespace or 'every namespace'}"


class KubeApi(ABC):
    """The few Kubernetes calls the controller makes.

    Every method raises ``lbaas.errors.TemporaryError`` for what retrying fixes (409,
    429, 5xx, connection errors), ``WatchExpired`` for 410 and ``PermanentError`` for
    any other refusal.
    """

    @abstractmethod
    async def list(self, collection: Collection) -> tuple[list[Json], str | None]:
        """Every object of a collection and the list's resourceVersion."""

    @abstractmethod
    def watch(self, collection: Collection, resource_version: str | None) -> AsyncIterator[Json]:
        """Watch events (``{type, object}``) from ``resource_version``; raises
        ``WatchExpired`` on 410 (as an HTTP status or an ERROR event). A stream the
        server ends is watched again from the last version seen."""

    @abstractmethod
    async def patch_service(
        self, namespace: str, name: str, body: Json, status: bool = False
    ) -> Json:
        """A JSON merge patch (``application/merge-patch+json``) of a Service, or of its
        ``/status`` subresource."""

    @abstractmethod
    async def create_event(self, body: Json) -> Json:
        """A core/v1 Event, in the namespace its metadata names."""

    @abstractmethod
    async def aclose(self) -> None: ...


class LeaseApi(ABC):
    """The ``coordination.k8s.io/v1`` Lease calls leader election makes. Errors as
    ``KubeApi``'s, with ``Conflict`` for 409."""

    @abstractmethod
    async def get_lease(self, namespace: str, name: str) -> Json | None:
        """The Lease, or None when there is none."""

    @abstractmethod
    async def create_lease(self, body: Json) -> Json:
        """Create the Lease ``body`` names; ``Conflict`` when it exists already."""

    @abstractmethod
    async def update_lease(self, namespace: str, name: str, body: Json) -> Json:
        """A JSON merge patch carrying ``metadata.resourceVersion`` as its precondition:
        ``Conflict`` when the Lease changed since that version."""
