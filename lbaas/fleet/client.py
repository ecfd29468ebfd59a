"""The controller's side of the agent API: a small httpx client with a client certificate.

It imports only the wire schema, the error tree and the certificates, so a provider can use
it without pulling in the agent. httpx's exceptions never leave this module; they are
translated here, at the boundary, into lbaas's tree:

* no connection, TLS refused, timeout, 502/503/504 -> ``AgentUnreachable`` (retry later);
* 422 (HAProxy refused the configuration) -> ``InvalidRenderedConfig`` with HAProxy's output
  as the operator message;
* 400 and 409 (a request the agent will never accept as it is) -> ``PermanentError``;
* any other 5xx -> ``TemporaryError``.

A transport can be passed in (``httpx.MockTransport`` in tests) instead of patching.

``server_name`` makes the client check *which* agent answers, not only that the project's
CA issued its certificate: TLS is told that name (SNI and host-name check) instead of the
URL's address, so an agent whose certificate does not name that host is refused at the
handshake — another enrolled agent on the same address included.
"""

from __future__ import annotations

import ssl
from types import TracebackType
from typing import Any

import httpx
from pydantic import ValidationError

from lbaas.certs.authority import TlsFiles
from lbaas.certs.reloading import ReloadingContext
from lbaas.certs.tlsconfig import client_context
from lbaas.errors import (
    AgentUnreachable,
    InvalidRenderedConfig,
    PermanentError,
    TemporaryError,
)
from lbaas.fleet.handshake import patient_transport
from lbaas.wire.amphora import API_PREFIX, AgentInfo, AmphoraSpec, AmphoraStatus, ErrorBody
from lbaas.wire.amphora_diagnosis import AmphoraDiagnosis
from lbaas.wire.certificates import (
    CERTIFICATE_PATH,
    SIGNING_REQUEST_PATH,
    TRUST_PATH,
    CertificateState,
    NewCertificate,
    SigningRequest,
    TrustBundle,
)

_UNREACHABLE_STATUSES = frozenset({502, 503, 504})


class AgentClient:
    """Talks to the agent at ``base_url`` (``https://10.0.0.5:9443``)."""

    def __init__(
        self,
        base_url: str,
        *,
        tls: TlsFiles | None = None,
        ssl_context: ssl.SSLContext | None = None,
        timeout: float | httpx.Timeout = 60.0,
        transport: httpx.BaseTransport | None = None,
        server_name: str | None = None,
        handshake_timeout: float | None = None,
    ) -> None:
        """``handshake_timeout``: seconds the TLS handshake may take, when longer than the
        connect timeout (an agent restarting behind a held socket, ``handshake``)."""
        verify: ssl.SSLContext | bool
        if ssl_context is not None:
            verify = ssl_context
        elif tls is not None:
            # A renewed controller certificate or trust bundle reaches new connections.
            verify = ReloadingContext(tls, client_context)
        else:
            verify = True
        if handshake_timeout is not None and transport is None:
            context = verify if isinstance(verify, ssl.SSLContext) else ssl.create_default_context()
            transport = patient_transport(context, handshake_timeout)
        self.base_url = base_url.rstrip("/")
        self.server_name = server_name
        self._extensions = {} if server_name is None else {"sni_hostname": server_name}
        self._http = httpx.Client(
            base_url=self.base_url, verify=verify, timeout=timeout, transport=transport
        )

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def put_amphora(self, amphora_id: str, spec: AmphoraSpec) -> AmphoraStatus:
        """Send the whole desired state of an amphora; the agent converges to it."""
        response = self._request(
            "PUT",
            f"{API_PREFIX}/amphorae/{amphora_id}",
            content=spec.model_dump_json(exclude=_older_amphora(spec)),
        )
        return AmphoraStatus.model_validate_json(response.content)

    def get_amphora(self, amphora_id: str) -> AmphoraStatus | None:
        """The agent's status of the amphora, or None if it does not know it."""
        response = self._request("GET", f"{API_PREFIX}/amphorae/{amphora_id}", allow_404=True)
        if response.status_code == 404:
            return None
        return AmphoraStatus.model_validate_json(response.content)

    def diagnose_amphora(self, amphora_id: str) -> AmphoraDiagnosis | None:
        """What the agent sees of the amphora now; None if it does not know it (or is an
        agent older than the route)."""
        path = f"{API_PREFIX}/amphorae/{amphora_id}/diagnosis"
        response = self._request("GET", path, allow_404=True)
        if response.status_code == 404:
            return None
        return AmphoraDiagnosis.model_validate_json(response.content)

    def delete_amphora(self, amphora_id: str) -> None:
        """Stop and remove the amphora (succeeds if it is already gone)."""
        self._request("DELETE", f"{API_PREFIX}/amphorae/{amphora_id}")

    def info(self) -> AgentInfo:
        return AgentInfo.model_validate_json(self._request("GET", f"{API_PREFIX}/info").content)

    def certificate(self) -> CertificateState:
        """The certificate and trust bundle the agent serves with now."""
        response = self._request("GET", f"{API_PREFIX}{CERTIFICATE_PATH}")
        return CertificateState.model_validate_json(response.content)

    def signing_request(self) -> SigningRequest:
        """Have the agent make a new key; its signing request."""
        response = self._request("POST", f"{API_PREFIX}{SIGNING_REQUEST_PATH}", content="{}")
        return SigningRequest.model_validate_json(response.content)

    def install_certificate(self, certificate_pem: str) -> CertificateState:
        body = NewCertificate(certificate=certificate_pem).model_dump_json()
        response = self._request("PUT", f"{API_PREFIX}{CERTIFICATE_PATH}", content=body)
        return CertificateState.model_validate_json(response.content)

    def set_trust(self, ca_bundle_pem: str) -> CertificateState:
        body = TrustBundle(ca_bundle=ca_bundle_pem).model_dump_json()
        response = self._request("PUT", f"{API_PREFIX}{TRUST_PATH}", content=body)
        return CertificateState.model_validate_json(response.content)

    def _request(
        self, method: str, path: str, *, content: str | None = None, allow_404: bool = False
    ) -> httpx.Response:
        where = f"{method} {self.base_url}{path}"
        headers = {"Content-Type": "application/json"} if content is not None else None
        try:
            response = self._http.request(
                method, path, content=content, headers=headers, extensions=self._extensions
            )
        except httpx.HTTPError as exc:
            unreachable = AgentUnreachable(
                "The load balancer's agent could not be reached.",
                delay=2.0,
                operator_message=f"{where}: {type(exc).__name__}: {exc}",
            )
            url = httpx.URL(self.base_url)
            if url.host and url.port:
                unreachable.address = (url.host, url.port)
            raise unreachable from exc
        if response.is_success or (allow_404 and response.status_code == 404):
            return response
        raise _translate(where, response)


def _translate(where: str, response: httpx.Response) -> Exception:
    status = response.status_code
    try:
        body = ErrorBody.model_validate_json(response.content)
        message, detail = body.message, body.detail
    except ValidationError:
        message, detail = response.text[:500], None
    operator = f"{where}: {status} {message}" + (f"\n{detail}" if detail else "")
    if status in _UNREACHABLE_STATUSES:
        return AgentUnreachable("The load balancer's agent is unavailable.", 2.0, operator)
    if status == 422:
        return InvalidRenderedConfig("HAProxy refused the rendered configuration.", operator)
    if status < 500:
        return PermanentError("The load balancer's agent refused the request.", operator)
    return TemporaryError("The load balancer's agent failed to apply the change.", 2.0, operator)


def _older_amphora(spec: AmphoraSpec) -> dict[str, Any]:
    """Fields newer than agents of earlier releases (which refuse unknown fields), left out
    where they say what those agents do anyway: a UDP listener's ``member_down`` keep."""
    if all(listener.member_down == "keep" for listener in spec.udp_listeners):
        return {"udp_listeners": {"__all__": {"member_down"}}}
    return {}
