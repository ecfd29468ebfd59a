"""One benchmark client, run inside a namespace by ``bench/l4.py``: rate and latency.

    l4_client.py tcp|udp ADDRESS PORT SECONDS   prints {"per_s": ..., "p99_ms": ...}

TCP: a new connection per request, done when the backend's greeting line arrives (so each
request is a new flow, balanced anew). UDP: one socket, one datagram and its answer per
request (one flow: the per-packet cost of the path, not the balancing decision).
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import time


def measure(protocol: str, address: str, port: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    udp = None
    if protocol == "udp":
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.settimeout(5)
        udp.connect((address, port))
    try:
        while time.monotonic() < deadline:
            start = time.perf_counter()
            if udp is not None:
                udp.send(b"?")
                udp.recv(100)
            else:
                with socket.create_connection((address, port), timeout=5) as conn:
                    conn.recv(100)
            latencies.append(time.perf_counter() - start)
    finally:
        if udp is not None:
            udp.close()
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else latencies[0]
    return {"per_s": round(len(latencies) / seconds), "p99_ms": round(p99 * 1000, 3)}


if __name__ == "__main__":
    kind, host, port_text, duration = sys.argv[1:5]
    print(json.dumps(measure(kind, host, int(port_text), float(duration))))
