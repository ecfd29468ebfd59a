"""The heartbeat sender: one signed UDP datagram per amphora per interval.

A heartbeat is how the health manager learns that an amphora is alive and what its HAProxy
sees, without a connection to keep. The sender asks for the current reports (one per amphora
whose statistics can be read), encodes each with ``lbaas.wire.heartbeat.report_codec`` and seals
it with ``lbaas.wire.heartbeat.envelope`` under the amphora's id, this agent's start time as the
epoch and a sequence number that only grows. An amphora whose HAProxy cannot answer sends
nothing: silence is what makes the health manager fail it over, and the supervisor restarts
a dead HAProxy well within the stale timeout.

Every datagram goes to each health manager of a list (Octavia's
``controller_ip_port_list``), so any of them may die. Each round also sends one host
heartbeat (``lbaas.wire.heartbeat.host_codec``) when a ``host_report`` is given: the agent
announcing its address, zone, capacity and the amphorae it runs.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from lbaas.model.health import HealthReport
from lbaas.wire.heartbeat.envelope import seal
from lbaas.wire.heartbeat.report_codec import to_payload

log = logging.getLogger(__name__)

ReportSource = Callable[[], Iterable[tuple[str, HealthReport]]]
HostReport = Callable[[], tuple[str, Mapping[str, Any]]]
"""(envelope sender, payload) of this round's host heartbeat."""
Address = tuple[str, int]


def _addresses(address: Address | Sequence[Address]) -> tuple[Address, ...]:
    """One (host, port) or several, as a tuple of them."""
    if len(address) == 2 and isinstance(address[0], str) and isinstance(address[1], int):
        return ((address[0], address[1]),)
    return tuple((str(a[0]), int(a[1])) for a in address if not isinstance(a, (str, int)))


class HeartbeatSender:
    """Sends the reports of ``source`` to every address every ``interval`` seconds."""

    def __init__(
        self,
        source: ReportSource,
        key: bytes,
        address: Address | Sequence[Address],
        *,
        interval: float = 1.0,
        epoch: int | None = None,
        host_report: HostReport | None = None,
        member_counters: bool = True,
    ) -> None:
        """``member_counters`` false: members' counters are never sent (their states are),
        which keeps a health manager's work per heartbeat to the listeners and pools."""
        self._source = source
        self._member_counters = member_counters
        self._key = key
        self._addresses = _addresses(address)
        self._host_report = host_report
        self._interval = interval
        self.epoch = time.time_ns() if epoch is None else epoch
        self._sequence = itertools.count(1)
        self._sockets = {
            family: socket.socket(family, socket.SOCK_DGRAM)
            for family in {self._family(a) for a in self._addresses}
        }
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.failures = 0

    @staticmethod
    def _family(address: Address) -> socket.AddressFamily:
        return socket.AF_INET6 if ":" in address[0] else socket.AF_INET

    def send_once(self) -> int:
        """Send one heartbeat per readable amphora (and the host's) now; how many."""
        sent = 0
        if self._host_report is not None:
            sender, payload = self._host_report()
            sent += self._send(sender, payload)
        for amphora_id, report in self._source():
            smaller = partial(to_payload, report, amphora_id, member_counters=False)
            if not self._member_counters:
                sent += self._send(amphora_id, smaller())
                continue
            sent += self._send(amphora_id, to_payload(report, amphora_id), smaller)
        self.sent += sent
        return sent

    def _send(
        self,
        sender: str,
        payload: Mapping[str, Any],
        smaller: Callable[[], Mapping[str, Any]] | None = None,
    ) -> int:
        """Seal one payload and send it to every health manager; 1 if any got it. Too
        large for a datagram, ``smaller`` (hundreds of members without their counters,
        whose states still count) is sealed instead."""
        try:
            try:
                datagram = self._seal(sender, payload)
            except ValueError:
                if smaller is None:
                    raise
                log.warning("heartbeat of %s too large: sent without member counters", sender)
                datagram = self._seal(sender, smaller())
        except ValueError as exc:  # too large for a datagram: only this sender misses
            self.failures += 1
            log.error("no heartbeat for %s: %s", sender, exc)
            return 0
        delivered = 0
        for address in self._addresses:
            try:
                self._sockets[self._family(address)].sendto(datagram, address)
                delivered = 1
            except OSError as exc:  # one unreachable health manager must not stop the rest
                self.failures += 1
                log.warning("heartbeat of %s to %s failed: %s", sender, address, exc)
        return delivered

    def _seal(self, sender: str, payload: Mapping[str, Any]) -> bytes:
        return seal(
            payload, self._key, sender=sender, epoch=self.epoch, sequence=next(self._sequence)
        )

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agent-heartbeat", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        for sock in self._sockets.values():
            sock.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Top of the sender loop: one bad round must not end the heartbeats.
            try:
                self.send_once()
            except Exception:  # noqa: BLE001 - logged and counted; the next round retries
                self.failures += 1
                log.exception("heartbeat round failed")
            self._stop.wait(self._interval)
