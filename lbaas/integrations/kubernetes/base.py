"""The two interfaces the controller's core is given: the Octavia v2 API and the
Kubernetes API. Implementations: ``octavia_sdk`` and ``kube_http``; tests pass in the
same implementations pointed at lbaas and kmock (or wrappers of them that count calls).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
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


class KubeApi(ABC):
    """The few Kubernetes REST calls the controller makes (paths are API paths)."""

    @abstractmethod
    async def list(self, path: str) -> tuple[list[Json], str | None]:
        """Every object at a collection path and the list's resourceVersion."""

    @abstractmethod
    def watch(self, path: str, resource_version: str | None) -> AsyncIterator[Json]:
        """Watch events (``{type, object}``) from ``resource_version``; raises
        ``WatchExpired`` on 410 (as an HTTP status or an ERROR event); ends when the
        server ends the stream."""

    @abstractmethod
    async def patch(self, path: str, body: Json) -> Json:
        """A JSON merge patch (``application/merge-patch+json``)."""

    @abstractmethod
    async def create(self, path: str, body: Json) -> Json: ...

    @abstractmethod
    async def aclose(self) -> None: ...
