"""Calls to lbaas's Octavia-v2 API, retried with backoff while lbaas cannot answer.

The driver is a trusted service of lbaas: every call carries ``X-Roles: admin`` and the
project of the object it concerns (``X-Project-Id``), which lbaas believes in its
``noauth`` (loopback) and ``keystone_headers`` modes, or a service token where lbaas
validates tokens. Retrying is safe because every create names its id (lbaas's ``GivenId``
extension): a create whose answer was lost comes back as 409 "already an entity with that
id", which is success, and a delete of what is gone is a 404, also success.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import httpx

from lbaas_octavia_provider.settings import Settings

LOG = logging.getLogger(__name__)
# httpx logs every request at INFO: the provider agent's rounds would fill Octavia's logs.
logging.getLogger("httpx").setLevel(logging.WARNING)
PREFIX = "/v2/lbaas"
# lbaas answers these while it is briefly unable to (a restart behind a proxy, the
# database busy); 409 "immutable" while an earlier change of the load balancer converges.
RETRIED_CODES = {502, 503, 504}
IMMUTABLE = "is immutable and cannot be updated"
ALREADY = "already an entity with that specified id"
FIRST_WAIT = 0.1
MAX_WAIT = 2.0


class LbaasError(Exception):
    """lbaas refused a call (its status code and Octavia-shaped fault string)."""

    def __init__(self, status: int, fault: str) -> None:
        super().__init__(f"lbaas answered {status}: {fault}")
        self.status = status
        self.fault = fault


class Unreachable(Exception):
    """lbaas did not answer within the retry window."""


def _fault(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict):
        return str(body.get("faultstring") or body.get("description") or body)[:500]
    return str(body)[:500]


class LbaasClient:
    def __init__(
        self,
        settings: Settings,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        headers = {"X-Roles": "admin", "Accept": "application/json"}
        if settings.token:
            headers["X-Auth-Token"] = settings.token
        self._http = httpx.Client(
            base_url=settings.url + PREFIX,
            headers=headers,
            timeout=settings.timeout,
            transport=transport,
        )
        self._sleep = sleep

    def close(self) -> None:
        self._http.close()

    def call(
        self, method: str, path: str, project: str | None = None, body: Any = None
    ) -> httpx.Response:
        """One call, retried with exponential backoff (0.1 s doubling to 2 s) on connection
        errors, 502-504 and 409 "immutable" answers until ``retry_seconds`` have passed."""
        headers = {"X-Project-Id": project} if project else {}
        deadline = time.monotonic() + self.settings.retry_seconds
        wait = FIRST_WAIT
        while True:
            try:
                response = self._http.request(method, path, json=body, headers=headers)
            except httpx.TransportError as exc:
                problem = f"{method} {path}: {exc.__class__.__name__}: {exc}"
            else:
                if not self._transient(response) or self._settled(method, response):
                    return response
                problem = f"{method} {path}: {response.status_code} {_fault(response)}"
            if time.monotonic() + wait > deadline:
                raise Unreachable(f"lbaas at {self.settings.url} did not answer: {problem}")
            LOG.warning("lbaas call retried in %.1f s: %s", wait, problem)
            self._sleep(wait)
            wait = min(wait * 2, MAX_WAIT)

    @staticmethod
    def _transient(response: httpx.Response) -> bool:
        if response.status_code == 409:
            return IMMUTABLE in _fault(response)
        return response.status_code in RETRIED_CODES

    @staticmethod
    def _settled(method: str, response: httpx.Response) -> bool:
        """A 409 for a create whose id exists: an earlier try of this very call got in."""
        return (
            method == "POST" and response.status_code == 409 and ALREADY in _fault(response).lower()
        )

    def write(self, method: str, path: str, project: str | None = None, body: Any = None) -> None:
        """A create, update or delete; raises LbaasError unless lbaas took it (or, for a
        delete, the object is already gone)."""
        response = self.call(method, path, project, body)
        if response.status_code < 300 or self._settled(method, response):
            return
        if method == "DELETE" and response.status_code == 404:
            return
        raise LbaasError(response.status_code, _fault(response))

    def read(self, path: str, params: dict[str, str] | None = None) -> Any:
        """A GET's JSON body; None for a 404."""
        query = "?" + str(httpx.QueryParams(params)) if params else ""
        response = self.call("GET", path + query)
        if response.status_code == 404:
            return None
        if response.status_code >= 300:
            raise LbaasError(response.status_code, _fault(response))
        return response.json()
