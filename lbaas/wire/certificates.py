"""The agent's certificate routes on the wire: renewal and trust without a restart.

The controller holds the CA; an enrolled agent's host holds none. So the controller
drives, over the mutual-TLS channel it already has with the agent:

    GET  /v1/certificate           -> 200 CertificateState
    POST /v1/certificate/request   -> 200 SigningRequest (a new key, kept by the agent)
    PUT  /v1/certificate           NewCertificate -> 200 CertificateState | 400
    PUT  /v1/trust                 TrustBundle -> 200 CertificateState | 400

The private key never leaves the agent's host: the agent makes it and sends a signing
request; the controller signs the public key with names it chooses itself (the host's
fleet name and address), never the names the request asks for. The agent installs a
certificate only if it matches its pending key and one CA it trusts issued it, and a
trust bundle only if its own certificate stays trusted under it. Its HTTPS server reads
the files again for new connections (``lbaas.certs.reloading``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CERTIFICATE_PATH = "/certificate"
SIGNING_REQUEST_PATH = "/certificate/request"
TRUST_PATH = "/trust"
MAX_PEM_BYTES = 64 * 1024


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CertificateState(_Wire):
    """The agent's certificate and trust bundle as it serves them now."""

    certificate: str = Field(description="PEM of the certificate the agent presents.")
    trust: str = Field(description="PEM bundle of the CAs whose client certificates it takes.")
    self_renewing: bool = Field(
        description="The agent holds the CA itself (``lbaas serve``) and renews on its own."
    )


class SigningRequest(_Wire):
    csr: str = Field(max_length=MAX_PEM_BYTES, description="PEM PKCS#10 request, new key.")


class NewCertificate(_Wire):
    certificate: str = Field(max_length=MAX_PEM_BYTES, description="PEM, for the pending key.")


class TrustBundle(_Wire):
    ca_bundle: str = Field(max_length=MAX_PEM_BYTES, description="PEM of every CA to trust.")
