"""One loopback endpoint in front of Octavia's API, routing by path as a service catalog
would: the stock ``openstack`` CLI with ``--os-auth-type none`` sends every service's
calls to one ``--os-endpoint``.

Octavia has no Neutron or Keystone here; lbaas's API stands in for them (its Neutron-style
``/v2/subnets`` reads and its ``/v3/projects`` lookups, made for the same CLI), so the
CLI's subnet and ``--project`` lookups go to lbaas and everything else to Octavia.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

NEUTRON_PATHS = ("/v2/subnets", "/v2/networks", "/v2/ports")
KEYSTONE_PATHS = ("/projects", "/v3/")
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def _target(path: str, octavia: str, lbaas: str) -> str:
    if path.startswith(NEUTRON_PATHS):
        return lbaas + path
    if path.startswith("/projects"):
        return lbaas + "/v3" + path
    if path.startswith(KEYSTONE_PATHS):
        return lbaas + path
    return octavia + path


@contextmanager
def catalog_proxy(octavia: str, lbaas: str) -> Iterator[str]:
    """Serve the routing endpoint on 127.0.0.1; yields its URL."""
    client = httpx.Client(timeout=120)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            answer = client.request(
                self.command, _target(self.path, octavia, lbaas), content=body, headers=headers
            )
            self.send_response(answer.status_code)
            for key, value in answer.headers.items():
                if key.lower() not in HOP_HEADERS and key.lower() != "content-encoding":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="catalog-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        client.close()
