"""What each access-log field costs HAProxy, in instructions per request (callgrind).

    python bench/access_log_instructions.py [--quick] [--seconds 5] [--close]
                                            [--variants lbaas,none,...]

Requests/s through a 2-core machine move by ±10 % from one round to the next, more than
the cost being looked for; instruction counts do not. Each variant runs one HAProxy
(``nbthread 1``, Debian's binary) under ``valgrind --tool=callgrind`` with counting off,
serves a few warm-up requests, counts while ``wrk`` (1 thread, 4 connections, keep-alive,
or ``Connection: close`` with ``--close``) loads it for ``--seconds``, and stops counting.
Instructions are user space only (HAProxy's and the libraries'), so the kernel's work per
request (about half of HAProxy's CPU in a ``perf`` profile) is not in these figures.

The configuration is the hand-written one of ``bench/dataplane.py`` with lbaas's names
(``be_<pool id>``, ``srv_<member id>``) and, for every variant but ``none``, lbaas's own
logging lines: the ``log`` directive, the ring forwarded to a UNIX socket (read here, each
line counted) and the listener's ``log-format`` from ``lbaas.render.haproxy.access_log``.
Variants: ``none`` (no logging), ``lbaas`` (the format lbaas renders for a plain HTTP
listener), ``tls_fetches`` (the two client-certificate fields as sample fetches, what a
plain listener rendered before), ``one_literal`` (a line of one character: the ring and
the sending alone), ``ci_inet_ntop`` (the client address as ``%ci``, which an IPv6
frontend keeps) and ``without_<field>`` (lbaas's format less one field). A field's
cost is ``lbaas`` minus ``without_<field>``. ``none`` and ``lbaas`` run a second time last
(``*_again``) to show how far a figure repeats. Prints one JSON document; nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dataplane_procs import AddressPlan, backend_config, free_port, haproxy_version  # noqa: E402

from lbaas.render.haproxy.access_log import (  # noqa: E402
    IPV4_CLIENT,
    RING,
    access_log_format,
    global_log_line,
    ring_lines,
)

PROJECT, LB, LISTENER, POOL = (
    uuid.uuid4().hex,
    str(uuid.uuid4()),
    str(uuid.uuid4()),
    str(uuid.uuid4()),
)
MEMBERS = (str(uuid.uuid4()), str(uuid.uuid4()))
#: Fields removed one at a time, by the name their variant and cost carry; ``ids`` is the
#: three literal ids at the start of the line.
FIELDS = {
    "ids": "ids", "ci": IPV4_CLIENT, "cp": "%cp", "t": "%t", "request_line": "%{+Q}r", "ST": "%ST",
    "B": "%B", "U": "%U", "b": "%b", "s": "%s", "Tt": "%Tt", "tsc": "%tsc",
}  # fmt: skip
#: Requests served before counting starts (each gives a line before the count is read).
WARM_UP = 20
_TOTALS = re.compile(rb"^totals:\s+(\d+)", re.MULTILINE)
_WRK_REQUESTS = re.compile(r"(\d+) requests in")
#: The request-line field: lines with it are told apart from the warm-up's by their path.
_REQUEST = "%{+Q}r"


def lbaas_format(terminates_tls: bool = False) -> str:
    return access_log_format(PROJECT, LB, LISTENER, True, terminates_tls, ipv4=True)


def without(field: str) -> str:
    tokens = lbaas_format().split(" ")
    return " ".join(tokens[3:] if field == "ids" else [t for t in tokens if t != field])


def formats(selected: list[str] | None) -> dict[str, str | None]:
    every: dict[str, str | None] = {
        "none": None,
        "lbaas": lbaas_format(),
        "tls_fetches": lbaas_format(terminates_tls=True),
        "one_literal": "-",
    }
    every.update({f"without_{name}": without(field) for name, field in FIELDS.items()})
    # The client address as %ci prints it (glibc's inet_ntop), what lbaas rendered for an
    # IPv4 frontend until 2026-11-27 and still renders for an IPv6 one.
    every["ci_inet_ntop"] = lbaas_format().replace(IPV4_CLIENT, "%ci")
    if selected is None:
        return every
    unknown = set(selected) - set(every)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; known: {sorted(every)}")
    return {name: every[name] for name in selected}


def config(address: str, port: int, backend: str, ports: list[int], log_format: str | None,
           sock: Path) -> str:  # fmt: skip
    lines = ["global", "    nbthread 1", "    maxconn 4000"]
    if log_format is not None:
        lines += [f"    {global_log_line()}", f"ring {RING}"]
        lines += [f"    {line}" for line in ring_lines(f'"unix@{sock}"')]
    lines += ["defaults", "    mode http", "    timeout connect 5s", "    timeout client 50s",
              "    timeout server 50s", "frontend fe", f"    bind {address}:{port}"]  # fmt: skip
    if log_format is not None:
        escaped = log_format.replace("\\", "\\\\").replace('"', '\\"')
        lines += ["    log global", f'    log-format "{escaped}"']
    lines += [f"    default_backend be_{POOL}", f"backend be_{POOL}", "    balance roundrobin"]
    lines += [f"    server srv_{m} {backend}:{p}" for m, p in zip(MEMBERS, ports, strict=True)]
    return "\n".join(lines) + "\n"


#: The path wrk asks for; the warm-up and readiness requests ask for another.
MEASURED_PATH = "/some/path?q=1"


class LineCounter:
    """The agent's end of the ring: accepts the forwarder and counts the lines it sends,
    all of them (``lines``) and those of wrk's requests (``measured``).

    Counting wrk's own lines keeps a late warm-up line out of the figure: under valgrind
    on a busy machine a readiness probe can time out on the client's side and still be
    served and logged seconds later, after the count before wrk has settled.
    """

    def __init__(self, path: Path) -> None:
        self.lines = 0
        self.measured = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(4)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        marker, partial = MEASURED_PATH.encode(), b""
        with conn:
            while chunk := conn.recv(1 << 20):
                whole, newline, partial = (partial + chunk).rpartition(b"\n")
                if newline:
                    self.lines += whole.count(b"\n") + 1
                    self.measured += whole.count(marker)

    def settled(self, minimum: int) -> int:
        """The count once it is at least ``minimum`` and still for a moment (valgrind is
        slow, and the forwarder sends what the ring holds when it gets to it)."""
        deadline = time.monotonic() + 30
        last = -1
        while (self.lines != last or self.lines < minimum) and time.monotonic() < deadline:
            last = self.lines
            time.sleep(0.5)
        return self.lines

    def close(self) -> None:
        self.listener.close()


def _get(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2) as sock:
            sock.sendall(b"GET /warm HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def _control(pid: int, switch: str) -> None:
    subprocess.run(["callgrind_control", "-i", switch, str(pid)], capture_output=True, check=True)


def measure(name: str, log_format: str | None, seconds: int, close: bool, workdir: Path,
            plan: AddressPlan, ports: list[int]) -> dict[str, Any]:  # fmt: skip
    sock, out = workdir / f"{name}.sock", workdir / f"{name}.callgrind"
    counter = LineCounter(sock)
    port = free_port(host=plan.handwritten_address)
    cfg = workdir / f"{name}.cfg"
    cfg.write_text(
        config(plan.handwritten_address, port, plan.backend_address, ports, log_format, sock)
    )
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
         "haproxy", "-db", "-f", str(cfg)],  # fmt: skip
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not _get(plan.handwritten_address, port):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"{name}: HAProxy under valgrind did not serve")
            time.sleep(0.3)
        for _ in range(WARM_UP):
            _get(plan.handwritten_address, port)
        before = counter.settled(WARM_UP + 1 if log_format is not None else 0)
        _control(proc.pid, "on")
        # A long timeout: wrk counts a slow answer (valgrind) as an error, never a request.
        wrk = ["wrk", "-t1", "-c4", f"-d{seconds}s", "--timeout", "30s"]
        wrk += ["-H", "Connection: close"] if close else []
        done = subprocess.run([*wrk, f"http://{plan.handwritten_address}:{port}{MEASURED_PATH}"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        _control(proc.pid, "off")
        after = counter.settled(0)
        # Lines that carry the request line are told apart; the others only counted.
        lines = counter.measured if log_format and _REQUEST in log_format else after - before
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        counter.close()
    requests = int(_WRK_REQUESTS.search(done.stdout).group(1))  # type: ignore[union-attr]
    totals = _TOTALS.search(out.read_bytes())
    instructions = int(totals.group(1)) if totals else 0
    return {
        "requests": requests,
        "log_lines": lines if log_format is not None else None,
        "instructions_per_request": round(instructions / max(requests, 1)),
    }


def _tools() -> None:
    missing = [tool for tool in ("valgrind", "callgrind_control", "wrk") if not shutil.which(tool)]
    if missing and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "valgrind", "wrk"],
                       capture_output=True, check=False)  # fmt: skip
        missing = [tool for tool in missing if not shutil.which(tool)]
    if missing:
        raise SystemExit(f"needs {', '.join(missing)} (apt-get install valgrind wrk, as root)")


def summary(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    per = {name: r["instructions_per_request"] for name, r in results.items()}
    if "none" not in per or "lbaas" not in per:
        return {}
    logging = per["lbaas"] - per["none"]
    fields = {
        name.removeprefix("without_"): per["lbaas"] - value
        for name, value in per.items()
        if name.startswith("without_")
    }
    figures: dict[str, Any] = {
        "logging_instructions_per_request": logging,
        "logging_share_of_no_logging": round(logging / per["none"], 3),
        "field_instructions": fields,
    }
    if "one_literal" in per:
        figures["ring_and_sending_instructions"] = per["one_literal"] - per["none"]
    if "tls_fetches" in per:
        figures["tls_fetches_instructions"] = per["tls_fetches"] - per["lbaas"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="none and lbaas, 1 s each")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--close", action="store_true", help="a new connection per request")
    parser.add_argument("--variants", help="comma-separated names (default: all)")
    args = parser.parse_args()
    _tools()
    selected = args.variants.split(",") if args.variants else None
    if args.quick:
        selected, args.seconds = ["none", "lbaas"], 1
    chosen = formats(selected)
    plan = AddressPlan.random()
    ports = [free_port(host=plan.backend_address) for _ in MEMBERS]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="lbaas-log-instr-") as tmp:
        workdir = Path(tmp)
        (workdir / "backend.cfg").write_text(
            backend_config(plan.backend_address, {f"b{i}": p for i, p in enumerate(ports)})
        )
        backend = subprocess.Popen(["haproxy", "-db", "-f", str(workdir / "backend.cfg")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            runs = list(chosen.items())
            if not args.quick and "none" in chosen and "lbaas" in chosen:
                runs += [("none_again", chosen["none"]), ("lbaas_again", chosen["lbaas"])]
            for name, log_format in runs:
                results[name] = measure(name, log_format, args.seconds, args.close, workdir,
                                        plan, ports)  # fmt: skip
        finally:
            backend.terminate()
            backend.wait(timeout=10)
    print(json.dumps({
        "haproxy": haproxy_version(),
        "mode": "new connection per request" if args.close else "keep-alive",
        "seconds_per_variant": args.seconds,
        "load_average": os.getloadavg(),
        "formats": {name: fmt for name, fmt in chosen.items()},
        "variants": results,
        **summary(results),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
