"""The heartbeat sender: one signed UDP datagram per amphora per interval.

A heartbeat is how the health manager learns that an amphora is alive and what its HAProxy
sees, without a connection to keep. The sender asks for the current reports (one per amphora
whose statistics can be read), encodes each with ``lbaas.heartbeat.report_codec`` and seals
it with ``lbaas.heartbeat.envelope`` under the amphora's id, this agent's start time as the
epoch and a sequence number that only grows. An amphora whose HAProxy cannot answer sends
nothing: silence is what makes the health manager fail it over, and the supervisor restarts
a dead HAProxy well within the stale timeout.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable

from lbaas.heartbeat.envelope import seal
from lbaas.heartbeat.report_codec import to_payload
from lbaas.model.health import HealthReport

log = logging.getLogger(__name__)

ReportSource = Callable[[], Iterable[tuple[str, HealthReport]]]


class HeartbeatSender:
    """Sends the reports of ``source`` to ``address`` every ``interval`` seconds."""

    def __init__(
        self,
        source: ReportSource,
        key: bytes,
        address: tuple[str, int],
        *,
        interval: float = 1.0,
        epoch: int | None = None,
    ) -> None:
        self._source = source
        self._key = key
        self._address = address
        self._interval = interval
        self.epoch = time.time_ns() if epoch is None else epoch
        self._sequence = itertools.count(1)
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.failures = 0

    def send_once(self) -> int:
        """Send one heartbeat per readable amphora now; how many were sent."""
        sent = 0
        for amphora_id, report in self._source():
            try:
                datagram = seal(
                    to_payload(report, amphora_id),
                    self._key,
                    sender=amphora_id,
                    epoch=self.epoch,
                    sequence=next(self._sequence),
                )
            except ValueError as exc:  # too large for a datagram: only this amphora misses
                self.failures += 1
                log.error("no heartbeat for amphora %s: %s", amphora_id, exc)
                continue
            try:
                self._socket.sendto(datagram, self._address)
            except OSError as exc:
                self.failures += 1
                log.warning(
                    "heartbeat of amphora %s to %s failed: %s", amphora_id, self._address, exc
                )
                continue
            sent += 1
        self.sent += sent
        return sent

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agent-heartbeat", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._socket.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Top of the sender loop: one bad round must not end the heartbeats.
            try:
                self.send_once()
            except Exception:  # noqa: BLE001 - logged and counted; the next round retries
                self.failures += 1
                log.exception("heartbeat round failed")
            self._stop.wait(self._interval)
