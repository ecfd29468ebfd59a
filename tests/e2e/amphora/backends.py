"""Real backend servers on 127.0.0.1 for the load balancers under test.

``HttpBackend`` is a threaded HTTP/1.1 server that answers every GET with its own name;
``GET /echo`` (or any path under it) answers JSON with its name, the client address it saw,
the path and the request headers, which is how a test sees what HAProxy forwarded. It can
be stopped and started again on the same port (a member going down and coming back).

``ProxyProtocolBackend`` is a TCP server that reads a PROXY protocol header (v1 text or
v2 binary), then answers one line of JSON with the client address the header carried and
the version it used, and closes. A connection without a valid header is answered with
``{"error": ...}``.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import socketserver
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BACKEND_ADDRESS = "127.0.0.1"
PROXY_V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


class _NamedHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], name: str) -> None:
        self.name = name
        self.requests_seen = 0
        self.count_lock = threading.Lock()
        super().__init__(address, _EchoHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about peers that hang up (HAProxy closes idle server connections)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _NamedHttpServer

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        with self.server.count_lock:
            self.server.requests_seen += 1
        if self.path.startswith("/echo"):
            payload: dict[str, Any] = {
                "name": self.server.name,
                "client": self.client_address[0],
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
            self._answer(json.dumps(payload).encode(), "application/json")
        else:
            self._answer(self.server.name.encode(), "text/plain")

    def do_HEAD(self) -> None:  # noqa: N802 - health checks may use HEAD
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


class HttpBackend:
    """An HTTP server named ``name`` on 127.0.0.1 (a free port unless one is given)."""

    def __init__(self, name: str, port: int = 0) -> None:
        self.name = name
        self.address = BACKEND_ADDRESS
        self._server: _NamedHttpServer | None = None
        self._thread: threading.Thread | None = None
        self.port = port
        self.start()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def requests_seen(self) -> int:
        return 0 if self._server is None else self._server.requests_seen

    def start(self) -> None:
        if self._server is not None:
            return
        server = _NamedHttpServer((self.address, self.port), self.name)
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"backend-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop answering: the port is closed (connections are refused) until ``start``."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def close(self) -> None:
        self.stop()


def parse_proxy_header(stream: socket.socket) -> dict[str, Any]:
    """Read one PROXY protocol header from ``stream``: version, source and destination."""
    first = _read_exactly(stream, 12)
    if first == PROXY_V2_SIGNATURE:
        return _parse_v2(stream)
    if first.startswith(b"PROXY "):
        return _parse_v1(first, stream)
    raise ValueError(f"no PROXY protocol header: {first!r}")


def _parse_v1(start: bytes, stream: socket.socket) -> dict[str, Any]:
    line = start
    while not line.endswith(b"\r\n"):
        if len(line) > 107:
            raise ValueError("PROXY v1 header longer than 107 bytes")
        line += _read_exactly(stream, 1)
    words = line.decode("ascii").strip().split(" ")
    if words[1] == "UNKNOWN":
        return {"version": 1, "family": "UNKNOWN"}
    _, family, src, dst, src_port, dst_port = words
    return {
        "version": 1,
        "family": family,
        "source": src,
        "source_port": int(src_port),
        "destination": dst,
        "destination_port": int(dst_port),
    }


def _parse_v2(stream: socket.socket) -> dict[str, Any]:
    version_command, family_protocol, length = struct.unpack("!BBH", _read_exactly(stream, 4))
    body = _read_exactly(stream, length)
    if version_command >> 4 != 2:
        raise ValueError(f"PROXY v2 header with version {version_command >> 4}")
    command = version_command & 0x0F
    family = family_protocol >> 4
    if command == 0:
        return {"version": 2, "family": "LOCAL"}
    if family == 1:
        src, dst, src_port, dst_port = struct.unpack("!4s4sHH", body[:12])
        return {
            "version": 2,
            "family": "TCP4",
            "source": str(ipaddress.IPv4Address(src)),
            "source_port": src_port,
            "destination": str(ipaddress.IPv4Address(dst)),
            "destination_port": dst_port,
        }
    if family == 2:
        src, dst, src_port, dst_port = struct.unpack("!16s16sHH", body[:36])
        return {
            "version": 2,
            "family": "TCP6",
            "source": str(ipaddress.IPv6Address(src)),
            "source_port": src_port,
            "destination": str(ipaddress.IPv6Address(dst)),
            "destination_port": dst_port,
        }
    return {"version": 2, "family": f"unsupported-{family}"}


def _read_exactly(stream: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = stream.recv(count - len(data))
        if not chunk:
            raise ValueError(f"connection closed after {len(data)} of {count} bytes")
        data += chunk
    return data


class _ProxyHandler(socketserver.BaseRequestHandler):
    request: socket.socket

    def handle(self) -> None:
        self.request.settimeout(10)
        try:
            answer: dict[str, Any] = parse_proxy_header(self.request)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            answer = {"error": str(exc)}
        answer["peer"] = self.client_address[0]
        try:
            self.request.sendall(json.dumps(answer).encode() + b"\n")
        except OSError:
            return


class _ThreadingTcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class ProxyProtocolBackend:
    """A TCP server on 127.0.0.1 that reports the client address of a PROXY header."""

    def __init__(self) -> None:
        self.address = BACKEND_ADDRESS
        self._server = _ThreadingTcpServer((self.address, 0), _ProxyHandler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="proxy-backend", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
