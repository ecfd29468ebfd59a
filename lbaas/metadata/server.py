"""The agent's end of the metadata proxies: an HTTP server on a UNIX socket.

Every network's HAProxy on this host passes its requests here with the network's id and
the client's address set by HAProxy itself (``metadata_haproxy``); the socket is the
agent's (mode 0600, root's), so nothing else can speak to it. Each request goes to
``MetadataForwarder``, which finds the port, signs and forwards.
"""

from __future__ import annotations

import logging
import os
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from lbaas.metadata import signing
from lbaas.metadata.base import UpstreamReply
from lbaas.metadata.haproxy_config import NETWORK_ID_HEADER
from lbaas.metadata.proxy import MetadataForwarder

log = logging.getLogger(__name__)


class _UnixHttpServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    forwarder: MetadataForwarder


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _UnixHttpServer

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self._answer(self._reply())

    def do_HEAD(self) -> None:  # noqa: N802
        reply = self._reply()
        self._answer(UpstreamReply(reply.status, reply.headers, b""), len(reply.body))

    def _reply(self) -> UpstreamReply:
        network = self.headers.get(NETWORK_ID_HEADER, "")
        source = self.headers.get(signing.FORWARDED_FOR, "")
        if not network or not source:
            return UpstreamReply(400, {"content-type": "text/plain"}, b"400 Bad Request\n")
        headers = {k: v for k, v in self.headers.items() if k.lower() != NETWORK_ID_HEADER.lower()}
        try:
            return self.server.forwarder.handle(network, source, self.command, self.path, headers)
        except Exception:  # noqa: BLE001 - the upstream failing is the client's 502, logged
            log.exception("metadata request from %s on network %s failed", source, network)
            return UpstreamReply(502, {"content-type": "text/plain"}, b"502 Bad Gateway\n")

    def _answer(self, reply: UpstreamReply, length: int | None = None) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            if name.lower() not in ("server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body) if length is None else length))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        log.debug("metadata: " + format, *args)

    def address_string(self) -> str:
        return "haproxy"


class MetadataSocketServer:
    """Serves ``forwarder`` on ``path`` in a thread; ``start`` and ``stop``."""

    def __init__(self, path: Path, forwarder: MetadataForwarder) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.unlink(missing_ok=True)  # an earlier agent's
        old_mask = os.umask(0o177)
        try:
            self._server = _UnixHttpServer(str(path), _Handler)
        finally:
            os.umask(old_mask)
        self._server.forwarder = forwarder
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metadata-socket", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.path.unlink(missing_ok=True)
