"""UDP echo backends and a client that opens a new flow per request, run inside namespaces.

Both are small scripts for ``ip netns exec … python -c``: ``ECHO`` answers every datagram
with its name in front (argv: name, address, port); ``ASK`` sends each request from a new
socket, so each is a new flow, and prints the name that answered or ``timeout`` (argv:
source address, target, port, count, and optionally a first source port: request n then
comes from that port + n, so a test can be sure no flow reuses the 5-tuple, and so the
conntrack entry, of an earlier one).
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable, Sequence

from lbaas.host.base import CommandResult

ECHO = """
import socket, sys
name, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((address, port))
while True:
    data, peer = s.recvfrom(2048); s.sendto(name.encode() + b" " + data, peer)
"""
ASK = """
import socket, sys
source, target, port, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
first = int(sys.argv[5]) if len(sys.argv) > 5 else None
for n in range(count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1.0)
    s.bind((source, 0 if first is None else first + n))
    s.sendto(b"hello %d" % n, (target, port))
    try: print(s.recv(2048).decode().split()[0])
    except socket.timeout: print("timeout")
    s.close()
"""


def echo_argv(name: str, address: str, port: int) -> list[str]:
    return [sys.executable, "-c", ECHO, name, address, str(port)]


def ask(
    run: Callable[[Sequence[str]], CommandResult],
    source: str,
    target: str,
    port: int,
    count: int,
    first_source_port: int | None = None,
) -> collections.Counter[str]:
    """Who answered ``count`` new flows (``run`` runs argv in the client's namespace);
    from ports ``first_source_port`` onwards if given, else from the kernel's choice."""
    argv = [sys.executable, "-c", ASK, source, target, str(port), str(count)]
    if first_source_port is not None:
        argv.append(str(first_source_port))
    out = run(argv)
    return collections.Counter(out.stdout.split())
