"""``ssl.SSLContext`` objects for the two ends of controller → agent mutual TLS.

Both contexts trust exactly one CA (the file in ``TlsFiles.ca``) and never the system store:
a certificate that some public CA issued must not open an agent. The server demands a client
certificate; the client checks the server's certificate and its host name (the agent's
certificate carries its addresses as IP SANs) and presents its own. TLS 1.2 is the floor.
"""

from __future__ import annotations

import ssl

from lbaas.certs.authority import TlsFiles


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """A server context that refuses any client without a certificate from the CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=files.cert, keyfile=files.key)
    context.load_verify_locations(cafile=files.ca)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """A client context presenting ``files.cert`` and verifying the server against the CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=files.ca)
    context.load_cert_chain(certfile=files.cert, keyfile=files.key)
    return context
