"""The agent's access-log reader on its own: its CPU per line at a steady line rate.

    python bench/access_log_reader.py [--quick] [--rate 30000] [--seconds 4] [--rounds 3]
                                      [--waits 0,0.005,0.02]

A sender process plays HAProxy's ring forwarder: it makes ``--rate`` lines/s of 270 bytes
(an access-log line's usual length) into a backlog and, every 0.4 ms, writes as much of the
backlog as the UNIX stream socket takes (non-blocking; the rest stays, as in the ring).
This process runs ``lbaas.amphora.access_log.AccessLogs`` with each ``BATCH_WAIT`` in turn
(0: the reader wakes for every write), interleaved over ``--rounds``, and reports the CPU
this process used per line (``time.process_time``: the reader thread, the main thread
only sleeps), the lines written against the lines sent, and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lbaas.amphora import access_log  # noqa: E402

LINE = b"p" * 269 + b"\n"


def _send(path: str, rate: int, seconds: float) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.setblocking(False)
    backlog = bytearray()
    made = 0
    total = int(seconds * rate)
    start = time.perf_counter()
    while made < total or backlog:
        due = min(int((time.perf_counter() - start) * rate), total)
        backlog += LINE * (due - made)
        made = due
        if backlog:
            try:
                backlog = backlog[sock.send(backlog) :]
            except BlockingIOError:
                pass
        time.sleep(0.0004)
    sock.close()


def one_run(wait: float, rate: int, seconds: float, workdir: Path) -> dict[str, Any]:
    logs = access_log.AccessLogs(
        workdir / "logs", workdir / "sock", max_bytes=1 << 30, backups=1, batch_wait=wait
    )
    sock = logs.socket_directory / "amp.sock"
    logs.ensure("amp", "lb", sock)
    sender = multiprocessing.Process(target=_send, args=(str(sock), rate, seconds))
    before = time.process_time()
    sender.start()
    sender.join()
    expected = int(seconds * rate)
    deadline = time.monotonic() + 5
    while logs.lines("amp") < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    used = time.process_time() - before
    written = logs.lines("amp")
    logs.close_all()
    (workdir / "logs" / "lb.log").unlink()
    return {"us_per_line": used * 1e6 / max(1, written), "sent": expected, "written": written}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=30000)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--waits", default="0,0.005,0.02")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.rate, args.seconds, args.rounds = 5000, 0.5, 1
    waits = [float(w) for w in args.waits.split(",")]
    runs: dict[float, list[dict[str, Any]]] = {w: [] for w in waits}
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="lbaas-logreader-") as tmp:
        for rnd in range(args.rounds):
            for wait in waits[rnd % len(waits) :] + waits[: rnd % len(waits)]:
                runs[wait].append(one_run(wait, args.rate, args.seconds, Path(tmp)))
    figures = {
        "rate_lines_per_s": args.rate,
        "seconds_per_run": args.seconds,
        "loadavg": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "batch_wait_s": {
            str(wait): {
                "reader_cpu_us_per_line": round(
                    statistics.median(r["us_per_line"] for r in samples), 2
                ),
                "samples_us_per_line": [round(r["us_per_line"], 2) for r in samples],
                "lines_missing": sum(r["sent"] - r["written"] for r in samples),
            }
            for wait, samples in runs.items()
        },
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
