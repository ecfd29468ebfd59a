"""Reading HAProxy's access-log ring from its backing file: the reader's CPU per line.

    python bench/ring_reader.py [--quick] [--seconds 3] [--ring-mb 16] [--connections 8]

A real HAProxy logs each request's path (269 bytes: a 270-byte message with its length
byte) into a file-backed ring of ``--ring-mb`` MiB, and wrk drives it. Two figures:

- parse: with wrk stopped and the ring full, ``RingFile.read`` of the whole ring over and
  over (every read copies and splits it again): the cost per line of a read by itself;
- live: while wrk runs for ``--seconds``, this process reads every 20 ms as the agent
  would; the CPU this process used per line read, the lines read against the requests
  wrk counted, and the bytes lost.

Prints one JSON object, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lbaas.agent.haproxy_ring import RingFile  # noqa: E402

PATH = "/" + "p" * 268  # 269 bytes logged: 270 per line with the length byte

CONFIG = """
global
    log ring@access len 8192 format raw local0 info
    tune.http.logurilen 4096
ring access
    format raw
    maxlen 8192
    size {size}
    backing-file {ring}
defaults
    mode http
    option dontlognull
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend web
    bind 127.0.0.1:{port}
    log global
    log-format "%HP"
    http-request return status 200
"""


def _wrk(port: int, seconds: float, connections: int) -> subprocess.Popen[str]:
    url = f"http://127.0.0.1:{port}{PATH}"
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{round(seconds)}s", url]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def _requests(output: str) -> int:
    match = re.search(r"(\d+) requests in", output)
    return int(match.group(1)) if match else -1


def _parse_cost(ring: RingFile) -> dict[str, float]:
    """The whole ring, read 20 times over in reads of ~2,000 lines (20 ms at 100,000/s)."""
    oldest, end = ring.bounds()
    lines = 0
    cpu = time.process_time()
    for _ in range(20):
        position = oldest
        while position < end:
            got = ring.read(position, limit=2000 * 270)
            lines += len(got.lines)
            position = got.end
    cpu = time.process_time() - cpu
    return {"lines": lines / 20, "us_per_line": round(cpu / lines * 1e6, 3)}


def _live(ring: RingFile, port: int, seconds: float, connections: int) -> dict[str, float]:
    position = ring.bounds()[1]
    wrk = _wrk(port, seconds, connections)
    lines = lost = 0
    cpu = time.process_time()
    while wrk.poll() is None or ring.bounds()[1] > position:
        got = ring.read(position)
        lines += len(got.lines)
        lost += got.lost
        position = got.end
        time.sleep(0.02)
    cpu = time.process_time() - cpu
    requests = _requests(wrk.communicate()[0])
    return {
        "requests": requests,
        "lines": lines,
        "lost_bytes": lost,
        "lines_per_s": round(lines / seconds),
        "us_per_line": round(cpu / max(lines, 1) * 1e6, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--ring-mb", type=int, default=16)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="1 s, 1 MiB ring (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.ring_mb = 1.0, 1
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        ring_path = Path(tmp) / "access.ring"
        config = Path(tmp) / "haproxy.cfg"
        config.write_text(CONFIG.format(size=args.ring_mb << 20, ring=ring_path, port=port))
        haproxy = subprocess.Popen(["/usr/sbin/haproxy", "-db", "-f", str(config)])
        try:
            time.sleep(0.3)
            ring = RingFile.open(ring_path)
            live = _live(ring, port, args.seconds, args.connections)
            parse = _parse_cost(ring)
            ring.close()
        finally:
            haproxy.terminate()
            haproxy.wait()
    report = {"live": live, "parse": parse, "load": os.getloadavg(), "cpus": os.cpu_count()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
