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

Every request states this code's wire version and every answer is read for the agent's
(``lbaas.wire.versions``): ``peer_version`` is what the agent last stated, and a feature
newer than the agent is not sent to it (``speaks``; a spec that needs one waits, see
``WireVersionTooOld``).
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
from lbaas.fleet.peer_versions import PeerVersions
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
from lbaas.wire.versions import FEATURES, HEADER, WIRE_VERSION, stated

_UNREACHABLE_STATUSES = frozenset({502, 503, 504})
#: Seconds before a change held for an agent's upgrade is tried again.
HELD_FOR_UPGRADE_DELAY = 60.0


class WireVersionTooOld(TemporaryError):
    """The agent speaks a wire version without a feature the spec needs: the change is
    held (retried, the load balancer PENDING_UPDATE) until the agent is upgraded, rather
    than sent without the feature (silently not applied) or refused by the agent."""


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
        peer: str | None = None,
        versions: PeerVersions | None = None,
    ) -> None:
        """``handshake_timeout``: seconds the TLS handshake may take, when longer than the
        connect timeout (an agent restarting behind a held socket, ``handshake``);
        ``versions`` is told the wire version each answer states, under ``peer`` (the
        host id; default the URL)."""
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
        self.peer = peer or self.base_url
        self._versions = versions
        #: The wire version the agent's last answer stated; None: no answer yet.
        self.peer_version: int | None = None
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
        udp = spec.udp_listeners
        if any(listener.member_down != "keep" for listener in udp):
            self.require("member_down", "a UDP pool's member_down_policy other than keep")
        if any(u.connection_limit is not None or u.idle_timeout is not None for u in udp):
            self.require("flow_limits", "a UDP listener's connection limit or idle timeout")
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

    def wire_version(self) -> int:
        """The agent's wire version: as its last answer stated, or asked (GET /v1/info;
        a refusal states it too)."""
        if self.peer_version is None:
            try:
                self.info()
            except PermanentError:
                if self.peer_version is None:
                    raise
        return self.peer_version if self.peer_version is not None else WIRE_VERSION

    def speaks(self, feature: str) -> bool:
        """Whether the agent has ``feature`` (a key of ``lbaas.wire.versions.FEATURES``)."""
        return self.wire_version() >= FEATURES[feature]

    def require(self, feature: str, what: str) -> None:
        """Raise ``WireVersionTooOld`` naming ``what`` unless the agent has ``feature``
        (asked again first: an agent upgraded since its last answer says so now)."""
        if self.speaks(feature):
            return
        self.info()
        if self.speaks(feature):
            return
        raise WireVersionTooOld(
            "The load balancer's agent is being upgraded; the change waits for it.",
            HELD_FOR_UPGRADE_DELAY,
            f"agent {self.peer} speaks wire version {self.peer_version}, and {what} needs "
            f"version {FEATURES[feature]}: held until that agent is upgraded",
        )

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
        headers = {HEADER: str(WIRE_VERSION)}
        if content is not None:
            headers["Content-Type"] = "application/json"
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
        self._heard(response)
        if response.is_success or (allow_404 and response.status_code == 404):
            return response
        raise _translate(where, response)

    def _heard(self, response: httpx.Response) -> None:
        """Note the version the answer states (errors state it too). A 5xx that states
        none is not taken for a version-1 agent: a proxy's 502 from no agent, or the
        server's own answer to a crash, which skips the agent's middleware."""
        value = response.headers.get(HEADER)
        if value is None and response.status_code >= 500:
            return
        self.peer_version = stated(value)
        if self._versions is not None:
            self._versions.record(self.peer, self.peer_version)


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
    where they say what those agents do anyway: a UDP listener's ``member_down`` keep, no
    ``connection_limit``, no ``idle_timeout`` (each left out alone when every listener has
    it so; ``put_amphora`` holds a spec that needs them from an older agent)."""
    udp = spec.udp_listeners
    fields = set()
    if all(listener.member_down == "keep" for listener in udp):
        fields.add("member_down")
    if all(listener.connection_limit is None for listener in udp):
        fields.add("connection_limit")
    if all(listener.idle_timeout is None for listener in udp):
        fields.add("idle_timeout")
    return {"udp_listeners": {"__all__": fields}} if fields else {}
