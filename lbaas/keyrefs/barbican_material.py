"""References into a Barbican the operator names, read over its v1 API.

Only references under one of ``[keymanager] barbican_endpoints`` are fetched, and a
container's member references must be under the same endpoint, so a tenant cannot make
the controller request an arbitrary URL. Each request carries the headers ``auth`` gives
for the load balancer's project: ``X-Project-Id`` for a Barbican without Keystone (its
unauthenticated pipeline, and lbaas's own key manager, read the project from it), or a
Keystone token of lbaas's service user, which the tenant lets read its secrets with a
Barbican ACL, as Octavia's service user is. A secret's payload is asked for in the content
type Barbican stored it with, and no answer is read past 1 MiB. Failures say the HTTP
status or the kind of network error, never a payload; an unreachable or overloaded
Barbican (network errors, 5xx, 429) is a transient failure, which a converge retries
instead of putting the load balancer in ERROR.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from lbaas.keyrefs.base import CONTAINERS, SECRETS, KeyMaterial, Unresolvable, ref_of

AuthHeaders = Callable[[str], Mapping[str, str]]


#: Largest answer read from Barbican: certificates, keys and PKCS#12 bundles are a few KiB;
#: more than this is not certificate material, and is not held in the controller's memory.
MAX_ANSWER_BYTES = 1 << 20


class BarbicanMaterial(KeyMaterial):
    def __init__(
        self,
        endpoints: tuple[str, ...],
        auth: AuthHeaders,
        client: httpx.Client,
        max_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._endpoints = tuple(e.rstrip("/") + "/" for e in endpoints)
        self._auth = auth
        self._client = client
        self._max_bytes = max_bytes

    def owns(self, ref: str) -> bool:
        """Whether ``ref`` points into one of the operator's Barbicans."""
        return any(ref.startswith(endpoint) for endpoint in self._endpoints)

    def _get(self, project_id: str, url: str, accept: str) -> bytes:
        headers = {**self._auth(project_id), "Accept": accept}
        try:
            with self._client.stream("GET", url, headers=headers) as got:
                if got.status_code != 200:
                    busy = got.status_code >= 500 or got.status_code == 429
                    reason = f"Barbican answered HTTP {got.status_code}"
                    raise Unresolvable(reason, transient=busy)
                return self._bounded(got)
        except httpx.HTTPError as exc:
            reason = f"Barbican not reachable ({type(exc).__name__})"
            raise Unresolvable(reason, transient=True) from None

    def _bounded(self, got: httpx.Response) -> bytes:
        body = bytearray()
        for chunk in got.iter_bytes():
            body += chunk
            if len(body) > self._max_bytes:
                raise Unresolvable(f"Barbican's answer is larger than {self._max_bytes} bytes")
        return bytes(body)

    def _json(self, project_id: str, url: str) -> dict[str, Any]:
        try:
            body = json.loads(self._get(project_id, url, "application/json"))
        except ValueError:
            raise Unresolvable("Barbican's answer is not JSON") from None
        if not isinstance(body, dict):
            raise Unresolvable("Barbican's answer is not an object")
        return body

    def _checked(self, ref: str, kind: str) -> str:
        if not self.owns(ref) or ref_of(ref).kind != kind:
            raise Unresolvable(f"not a {kind[:-1]} of the configured Barbican")
        return ref.split("?", 1)[0].rstrip("/")

    def secret(self, project_id: str, ref: str) -> bytes:
        url = self._checked(ref, SECRETS)
        types = self._json(project_id, url).get("content_types") or {}
        content_type = types.get("default") if isinstance(types, dict) else None
        if not isinstance(content_type, str):
            raise Unresolvable("the secret has no payload")
        return self._get(project_id, url + "/payload", content_type)

    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        body = self._json(project_id, self._checked(ref, CONTAINERS))
        members: dict[str, bytes] = {}
        for entry in body.get("secret_refs") or []:
            if not isinstance(entry, dict) or not isinstance(entry.get("secret_ref"), str):
                raise Unresolvable("the container lists a malformed secret reference")
            members[str(entry.get("name") or "")] = self.secret(project_id, entry["secret_ref"])
        return members


class RoutedMaterial(KeyMaterial):
    """References into the operator's Barbican go there; every other one to ``local``."""

    def __init__(self, local: KeyMaterial, barbican: BarbicanMaterial) -> None:
        self._local = local
        self._barbican = barbican

    def _for(self, ref: str) -> KeyMaterial:
        return self._barbican if self._barbican.owns(ref) else self._local

    def secret(self, project_id: str, ref: str) -> bytes:
        return self._for(ref).secret(project_id, ref)

    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        return self._for(ref).container(project_id, ref)
