"""Hold COUNT TCP connections to the VIP; on a line on stdin, ask each one for an answer.

    tier_hold.py VIP PORT COUNT

Prints "ready" once every connection got its backend's greeting, then waits for a line on
stdin (the bench kills a node meanwhile), sends a line on every connection at once and
prints {"survived": N, "total": COUNT}: the connections answered within 3 s.
"""

from __future__ import annotations

import json
import selectors
import socket
import sys
import time


def main() -> None:
    vip, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    connections = []
    for _ in range(count):
        conn = socket.create_connection((vip, port), timeout=5)
        conn.makefile().readline()  # the greeting: the connection is established end to end
        connections.append(conn)
    print("ready", flush=True)
    sys.stdin.readline()
    selector = selectors.DefaultSelector()
    for conn in connections:
        try:
            conn.sendall(b"still there?\n")
            conn.setblocking(False)
            selector.register(conn, selectors.EVENT_READ)
        except OSError:
            pass  # reset already: lost
    survived = 0
    deadline = time.monotonic() + 3.0
    while selector.get_map() and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(left):
            selector.unregister(key.fileobj)
            try:
                survived += bool(key.fileobj.recv(100))  # type: ignore[union-attr]
            except OSError:
                pass  # reset: lost
    print(json.dumps({"survived": survived, "total": count}), flush=True)


if __name__ == "__main__":
    main()
