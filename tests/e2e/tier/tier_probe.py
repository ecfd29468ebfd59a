"""New TCP connections in a loop for SECONDS; prints {"ok": N, "failed": M} as JSON.

    tier_probe.py VIP PORT SECONDS TIMEOUT

Run in the client namespace while a node dies: a connection hashed to the dead node before
its route is withdrawn gets no answer within TIMEOUT and counts as failed.
"""

from __future__ import annotations

import json
import socket
import sys
import time


def main() -> None:
    vip, port, seconds, timeout = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:5])
    counts = {"ok": 0, "failed": 0}
    deadline = time.monotonic() + seconds
    print("started", flush=True)
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((vip, port), timeout=timeout) as conn:
                conn.settimeout(timeout)
                counts["ok" if conn.recv(100) else "failed"] += 1
        except OSError:
            counts["failed"] += 1
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
