"""An HTTPS transport whose TLS handshake may wait longer than its TCP connect.

httpx bounds the TCP connect and the TLS handshake with one "connect" timeout. For an
agent they mean different things. A TCP connect that does not complete within a few
seconds means a lost or partitioned host (``client_pool.CONNECT_TIMEOUT``). But when a
service manager holds the agent's listening socket (socket activation), the connect
completes at once while the agent restarts, and the handshake waits in the backlog until
the new agent serves, a few seconds on a loaded host: cutting that wait at the connect
timeout would turn a converge that was about to be answered into a retry.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx


class _PatientStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, handshake_timeout: float) -> None:
        self._stream = stream
        self._handshake_timeout = handshake_timeout

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        patient = None if timeout is None else max(timeout, self._handshake_timeout)
        return self._stream.start_tls(ssl_context, server_hostname, patient)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class PatientTlsBackend(httpcore.NetworkBackend):
    """The usual sockets, with at least ``handshake_timeout`` seconds for TLS handshakes."""

    def __init__(self, handshake_timeout: float) -> None:
        self._inner = httpcore.SyncBackend()
        self._handshake_timeout = handshake_timeout

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _PatientStream(stream, self._handshake_timeout)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_unix_socket(path, timeout, socket_options)
        return _PatientStream(stream, self._handshake_timeout)


def patient_transport(verify: ssl.SSLContext, handshake_timeout: float) -> httpx.HTTPTransport:
    """httpx's transport with ``PatientTlsBackend`` under it (pool limits as httpx's)."""
    transport = httpx.HTTPTransport(verify=verify)
    # httpx takes no network backend of its own: its pool is replaced by one that has it.
    transport._pool = httpcore.ConnectionPool(
        ssl_context=verify,
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=PatientTlsBackend(handshake_timeout),
    )
    return transport
