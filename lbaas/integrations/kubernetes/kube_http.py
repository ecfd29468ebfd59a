"""``KubeApi`` over httpx against the Kubernetes REST API.

Watches are chunked JSON lines (``?watch=true``); a 410 Gone arrives either as the HTTP
status or as an ERROR event carrying a Status with code 410, and both become
``WatchExpired`` so the caller relists.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from lbaas.errors import PermanentError, TemporaryError
from lbaas.integrations.kubernetes.base import Json, KubeApi, WatchExpired
from lbaas.integrations.kubernetes.kube_connection import KubeConnection
from lbaas.model.enums import WatchEventType

WATCH_TIMEOUT_SECONDS = 300
"""Asked of the server per watch (it ends the stream then and the watch restarts)."""


def _raise_for(response: httpx.Response, what: str) -> None:
    status = response.status_code
    if status < 300:
        return
    detail = f"{what}: {status} {response.text[:300]}"
    if status == 410:
        raise WatchExpired(detail)
    if status in (409, 429) or status >= 500:
        raise TemporaryError(detail, delay=0.5)
    raise PermanentError(detail)


class HttpKube(KubeApi):
    def __init__(self, connection: KubeConnection) -> None:
        headers = {"Accept": "application/json"}
        if connection.token:
            headers["Authorization"] = f"Bearer {connection.token}"
        self._client = httpx.AsyncClient(
            base_url=connection.server,
            headers=headers,
            verify=connection.ssl_context(),
            timeout=httpx.Timeout(30.0, read=WATCH_TIMEOUT_SECONDS + 30),
        )

    async def _request(self, method: str, path: str, **kwargs: Any) -> Json:
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise TemporaryError(f"Kubernetes API unreachable: {exc!r}") from exc
        _raise_for(response, f"{method} {path}")
        result: Json = response.json()
        return result

    async def list(self, path: str) -> tuple[list[Json], str | None]:
        body = await self._request("GET", path)
        version = (body.get("metadata") or {}).get("resourceVersion")
        return list(body.get("items") or []), version

    async def watch(self, path: str, resource_version: str | None) -> AsyncIterator[Json]:
        params: dict[str, str] = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_TIMEOUT_SECONDS),
        }
        if resource_version:
            params["resourceVersion"] = resource_version
        try:
            async with self._client.stream("GET", path, params=params) as response:
                if response.status_code >= 300:
                    await response.aread()
                    _raise_for(response, f"watch {path}")
                async for line in response.aiter_lines():
                    if line.strip():
                        yield _checked_event(json.loads(line))
        except httpx.TransportError as exc:
            raise TemporaryError(f"watch {path} broken: {exc!r}") from exc

    async def patch(self, path: str, body: Json) -> Json:
        headers = {"Content-Type": "application/merge-patch+json"}
        return await self._request("PATCH", path, content=json.dumps(body), headers=headers)

    async def create(self, path: str, body: Json) -> Json:
        return await self._request("POST", path, json=body)

    async def aclose(self) -> None:
        await self._client.aclose()


def _checked_event(event: Json) -> Json:
    if event.get("type") == WatchEventType.ERROR:
        status = event.get("object") or {}
        if status.get("code") == 410:
            raise WatchExpired(str(status.get("message") or "resourceVersion too old"))
        raise TemporaryError(f"watch error: {status.get('message')!r}")
    return event
