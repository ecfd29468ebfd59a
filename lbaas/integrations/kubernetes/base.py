"""The two interfaces the controller's core is given: the Octavia v2 API and the
Kubernetes API. Implementations: ``octavia_sdk`` and ``kube_client`` (lightkube); tests
pass in the same implementations pointed at lbaas and kmock (or wrappers of them that
count calls). Objects cross both as plain JSON dicts, which is what the pure core reads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lbaas.errors import LbaasError, PermanentError

Json = dict[str, Any]


class OctaviaNotFound(PermanentError):
    """404 from the Octavia API: the object is gone (often what a caller wanted)."""


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
