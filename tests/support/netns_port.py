"""A port of the host's 127.0.0.1 forwarded to a port of a network namespace's 127.0.0.1.

Processes outside the namespace (Octavia's API and driver agent, the ``openstack`` CLI,
the test) then reach an API that a test runs inside a namespace of its own. The listening
socket is made in the caller's namespace; the forwarding thread then moves itself into the
target namespace (the network namespace is per thread), so every socket it and the pipe
threads it starts make is made there. Needs root, as the namespace does.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from lbaas.host.netns_thread import enter_network_namespace

CHUNK = 65536


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` into ``sink`` until either end closes, then close both."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def _forward(listener: socket.socket, namespace: str, port: int) -> None:
    enter_network_namespace(namespace)
    while True:
        try:
            client, _ = listener.accept()
        except OSError:  # the listener closed: the forwarder ends
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            client.close()
            continue
        upstream.settimeout(None)
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


@contextmanager
def forwarded_port(namespace: str, port: int) -> Iterator[int]:
    """Forward a free port of this namespace's 127.0.0.1 to ``port`` of ``namespace``'s
    127.0.0.1 while the block runs; yields the local port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    thread = threading.Thread(
        target=_forward, args=(listener, namespace, port), name=f"fwd-{namespace}", daemon=True
    )
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(10)
