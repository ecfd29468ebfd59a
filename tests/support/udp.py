"""A UDP socket on 127.0.0.1 that heartbeats are sent to in tests, always closed."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def udp_receiver(timeout: float) -> Iterator[socket.socket]:
    """A bound UDP socket whose ``recv`` gives up after ``timeout`` seconds."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(timeout)
    try:
        yield sock
    finally:
        sock.close()
