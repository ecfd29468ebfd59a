"""The flood phase of ``bench/health_manager.py``: forged datagrams against real heartbeats.

A real ``HeartbeatReceiver`` (receive loop, queue, processing loop) on the bench's SQL
store listens on 127.0.0.1. Two other processes (so that they do not share the
receiver's interpreter lock) send for ``seconds``: one forged datagrams signed with the
wrong key as fast as it can, one the genuine heartbeats of every amphora each
``interval``. Afterwards: how many forged datagrams were sent and refused (per second,
and the receiver process's CPU per refusal; what the receiver never saw the kernel dropped
for a full socket buffer), how many genuine heartbeats were sent and
how many were lost, the longest any amphora looked silent while the flood ran (it must
stay well under ``stale_after`` or healthy amphorae would be failed over), and how many
log lines the refusals cost.
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import time
from typing import Any

from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver, ReceiverCounts
from lbaas.health.sql_store import SqlHealthStore
from lbaas.model.health import HealthReport
from lbaas.wire.heartbeat.envelope import ReplayGuard, seal
from lbaas.wire.heartbeat.report_codec import to_payload

KEY = b"bench-heartbeat-key-of-32-bytes!"


def _flood(address: tuple[str, int], seconds: float, sample: bytes, shared: Any) -> None:
    """Send ``sample`` (a forged datagram) as fast as possible for ``seconds``.

    ``shared``: [datagrams sent, start, end] (monotonic time is system-wide on Linux).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    count, start = 0, time.monotonic()
    shared[1] = start
    while time.monotonic() < start + seconds:
        for _ in range(256):
            try:
                sock.sendto(sample, address)
                count += 1
            except OSError:
                pass
    shared[0], shared[2] = count, time.monotonic()


def _genuine(
    address: tuple[str, int], rounds: list[list[bytes]], interval: float, flood: Any, sent: Any
) -> None:
    """Once the flood has started, send one prepared round of heartbeats every ``interval``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    while flood[1] == 0:
        time.sleep(0.001)
    count, start = 0, time.monotonic()
    for n, datagrams in enumerate(rounds):
        time.sleep(max(0.0, start + n * interval - time.monotonic()))
        for datagram in datagrams:
            sock.sendto(datagram, address)
            count += 1
    sent.value = count


def flood_phase(
    store: SqlHealthStore,
    beats: list[tuple[str, list[HealthReport]]],
    *,
    seconds: float,
    interval: float,
    epoch: int,
    first_sequence: int,
) -> dict[str, Any]:
    """``beats``: per amphora, its reports for each round, sent as ``epoch`` from
    ``first_sequence`` on (so that they continue what the amphorae sent before)."""
    rounds = [
        [
            seal(to_payload(reports[n], amp), KEY, sender=amp, epoch=epoch, sequence=sequence)
            for amp, reports in beats
        ]
        for n, sequence in enumerate(range(first_sequence, first_sequence + len(beats[0][1])))
    ]
    forged = seal(
        to_payload(beats[0][1][0], beats[0][0]), b"wrong" * 7, sender="x", epoch=1, sequence=1
    )
    receiver = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard(max_age=300.0))
    refusal_us = _refusal_cost(store, forged)
    log_bytes = _LogBytes()
    logging.getLogger("lbaas").addHandler(log_bytes)
    spawn = multiprocessing.get_context("spawn")
    flood, genuine_sent = spawn.Array("d", 3), spawn.Value("q", 0)
    overflows = _receive_buffer_errors()
    with receiver:
        flooder = spawn.Process(target=_flood, args=(receiver.address, seconds, forged, flood))
        sender = spawn.Process(
            target=_genuine, args=(receiver.address, rounds, interval, flood, genuine_sent)
        )
        sender.start()
        flooder.start()
        while flood[1] == 0 and flooder.is_alive():
            time.sleep(0.001)
        cpu = time.process_time()
        longest_silence = _watch_silence(store, receiver, [amp for amp, _ in beats], flooder)
        cpu = time.process_time() - cpu
        now = receiver.counters.snapshot()
        refused = now.rejected_signature
        sender.join()
        counts = _settled(receiver, genuine_sent.value)
        lines = receiver.refusals.lines
        overflows = _receive_buffer_errors() - overflows
    logging.getLogger("lbaas").removeHandler(log_bytes)
    flood_seconds = flood[2] - flood[1]
    forged_refused = counts.rejected_signature
    return {
        "flood_seconds": round(flood_seconds, 2),
        "forged_sent": int(flood[0]),
        "forged_refused": forged_refused,
        "forged_refused_per_s": round(refused / flood_seconds),
        "forged_dropped_in_the_kernel": int(flood[0]) - forged_refused,
        "kernel_receive_buffer_overflows": overflows,
        "receiver_process_cpu_us_per_refusal": round(cpu * 1e6 / max(1, refused), 2),
        "refusal_cpu_us_alone": refusal_us,
        "genuine_sent": genuine_sent.value,
        "genuine_accepted": counts.accepted,
        "genuine_lost": genuine_sent.value - counts.accepted,
        "longest_silence_of_an_amphora_s": round(longest_silence, 2),
        "refusal_log_lines": lines,
        "log_bytes_during_the_flood": log_bytes.written,
    }


def _receive_buffer_errors() -> int:
    """UDP datagrams the kernel dropped for a full socket buffer (host-wide, so other
    programs' count too)."""
    with open("/proc/net/snmp") as snmp:
        rows = [line.split() for line in snmp if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


class _LogBytes(logging.Handler):
    """Counts the bytes the lbaas loggers write (formatted as a log file would hold them)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        self.written = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.written += len(self.format(record).encode()) + 1


def _refusal_cost(store: SqlHealthStore, forged: bytes, n: int = 20_000) -> float:
    """CPU microseconds of the receive loop's gates on a forged datagram, no socket."""
    idle = HeartbeatReceiver(HeartbeatProcessor(store), KEY, ReplayGuard())
    cpu = time.thread_time()
    for _ in range(n):
        idle.admit(forged, "192.0.2.1")
    return round((time.thread_time() - cpu) * 1e6 / n, 2)


def _watch_silence(
    store: SqlHealthStore, receiver: HeartbeatReceiver, amphorae: list[str], flooder: Any
) -> float:
    """Sample every amphora's last-heard time while the flood runs; the longest silence.

    Counted from the first round received (the sender process takes a moment to start).
    """
    longest = 0.0
    while flooder.is_alive():
        flooder.join(0.25)
        if receiver.counters.snapshot().accepted < len(amphorae):
            continue
        now = time.time()
        seen = {hb.amphora_id: hb.last_seen for hb in store.list_amphora_heartbeats()}
        longest = max([longest, *(now - seen[a] for a in amphorae if a in seen)])
    return longest


def _settled(receiver: HeartbeatReceiver, expected: int) -> ReceiverCounts:
    """The receiver's counts once its queue has drained (or stopped moving for a second)."""
    last, still_since = receiver.counters.snapshot(), time.monotonic()
    while last.accepted < expected and time.monotonic() - still_since < 1.0:
        time.sleep(0.05)
        counts = receiver.counters.snapshot()
        if counts != last:
            last, still_since = counts, time.monotonic()
    return last
