"""Serving the agent's app over HTTPS with mutual TLS, in a background thread.

uvicorn serves the ASGI app with the context from ``lbaas.certs.tlsconfig.server_context``
(handed over through ``ssl_context_factory``, rebuilt when its files change: see
``lbaas.certs.reloading``), so a client without a certificate from the
project's CA fails the TLS handshake before any route runs. The listening socket is bound in
the constructor, which lets callers (and tests) ask for port 0 and read the real port
before the server thread starts, and makes a port clash fail at once and in the caller.
Or it is given one already listening (``listening``: a service manager's, see
``lbaas.host.activation``), which it serves as it is.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable

import uvicorn
from fastapi import FastAPI

from lbaas.certs.authority import TlsFiles
from lbaas.certs.reloading import ReloadingContext
from lbaas.certs.tlsconfig import server_context

#: Seconds a stopping server waits for its open connections before it cancels them.
_GRACEFUL_SHUTDOWN = 1


class AgentHttpsServer:
    """One uvicorn server in a daemon thread."""

    def __init__(
        self,
        app: FastAPI,
        host: str,
        port: int,
        tls: TlsFiles,
        listening: socket.socket | None = None,
    ) -> None:
        if listening is None:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listening = socket.socket(family, socket.SOCK_STREAM)
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listening.bind((host, port))
            listening.listen(128)
        self._socket = listening
        self.host = host
        self.port: int = self._socket.getsockname()[1]

        def tls_context(
            config: uvicorn.Config, default: Callable[[], ssl.SSLContext]
        ) -> ssl.SSLContext:
            # Renewed certificates and trust bundles reach new connections (``reloading``).
            return ReloadingContext(tls, server_context)

        config = uvicorn.Config(
            app,
            ssl_context_factory=tls_context,
            log_level="warning",
            access_log=False,
            lifespan="off",
            # A stop does not wait for the controllers' idle pooled connections (their TLS
            # close is never answered): it held SIGTERM for the whole 10 s join below.
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="agent-https", daemon=True)

    def _run(self) -> None:
        self._server.run(sockets=[self._socket])

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the agent HTTPS server did not start")
            time.sleep(0.02)

    @property
    def running(self) -> bool:
        """True while the server's thread runs (after ``stop``: it outlived the join)."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._socket.close()
