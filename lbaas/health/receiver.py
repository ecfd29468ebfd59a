"""The UDP heartbeat receiver: authenticate, de-duplicate, decode, hand on.

Agents push one signed datagram per amphora per interval; nothing is acknowledged, so the
receiver must take every datagram on its own merits. It runs three gates in order, each
refusing: the envelope's size and HMAC (a forged, unsigned or garbled datagram), the
replay guard (a datagram this process saw before or out of order; one sent too long ago
is counted apart, as late),
and the payload codec (a genuine, fresh datagram whose payload makes no sense). Only then
does the ``HeartbeatProcessor`` touch the store, so a refused datagram never does; the
store refuses what another health manager already saw newer (``lbaas.health.freshness``).

Refusing must cost far less than accepting, and must not starve genuine heartbeats. A
UDP source can be forged, so nothing here is decided on the address a datagram claims:
an earlier defence blocked sources that kept failing the HMAC, and a forger naming an
agent's own address and port thereby silenced that agent. Now every datagram is judged on
its own bytes, cheapest test first: size and magic, then an exact copy of a recent
heartbeat (``lbaas.health.recent_tags``, a set look-up), then the HMAC, and only for a
datagram that passes it the JSON header and this process's replay guard. Receiving and
processing are two threads: the receive loop drains the socket (a 64 MiB ``SO_RCVBUF``,
up to 64 datagrams per system call, ``lbaas.health.datagram_batch``) and runs those gates,
counting forged datagrams in a local tally added to the counters once per drained burst;
what passes goes through a bounded queue to the processing loop, which decodes the
payload and applies it. Only authenticated heartbeats reach that queue, so no forger
can fill it. Refusals are counted per gate (the remedies differ: signature rejects mean a
wrong key or someone probing the port, replay rejects clock skew or a replay, malformed
ones an agent bug) and logged as one summary line per interval
(``lbaas.health.refusals``). The catch-all sits at the top of each loop.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import select
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from lbaas.errors import HeartbeatLate, HeartbeatRejected
from lbaas.fleet.peer_versions import PeerVersions
from lbaas.health.datagram_batch import DatagramBatch
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor
from lbaas.health.recent_tags import RecentTags
from lbaas.health.refusals import RefusalLog
from lbaas.listening import bind_heartbeats
from lbaas.model.graph import AmphoraId
from lbaas.wire.heartbeat.envelope import Envelope, ReplayGuard, authentic, decode
from lbaas.wire.heartbeat.host_codec import from_host_payload, is_host_payload
from lbaas.wire.heartbeat.report_codec import from_payload
from lbaas.wire.versions import UNSTATED

if TYPE_CHECKING:
    from lbaas.health.fleet import HostRegistry

log = logging.getLogger(__name__)

_TAG_LEN = hashlib.sha256().digest_size
_BURST_BATCHES = 256
"""Batches drained in a row before the loop looks at ``stop`` and flushes its tally."""
QUEUE_SIZE = 10_000
"""Authenticated heartbeats waiting for the processing loop; beyond it they are dropped."""

CountName = Literal[
    "accepted",
    "rejected_signature",
    "rejected_replay",
    "rejected_late",
    "malformed",
    "ignored",
    "failed",
    "dropped",
]


@dataclass
class ReceiverCounts:
    """How many datagrams ended which way, since the receiver started."""

    accepted: int = 0
    rejected_signature: int = 0
    rejected_replay: int = 0
    """Seen before (an exact copy is refused before the hash) or older than the last."""
    rejected_late: int = 0
    """Sent longer ago (or further ahead) than the replay guard's freshness window."""
    malformed: int = 0
    ignored: int = 0
    """Genuine heartbeats of an amphora the store does not know."""
    failed: int = 0
    """Genuine heartbeats whose processing raised (a store error, say)."""
    dropped: int = 0
    """Genuine heartbeats dropped because the processing loop was QUEUE_SIZE behind."""

    @property
    def rejected(self) -> int:
        return self.rejected_signature + self.rejected_replay + self.rejected_late + self.malformed


class ReceiverCounters:
    """Thread-safe ``ReceiverCounts``: bumped by the receive loop, read by anyone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = ReceiverCounts()

    def bump(self, name: CountName, count: int = 1) -> None:
        with self._lock:
            setattr(self._counts, name, getattr(self._counts, name) + count)

    def snapshot(self) -> ReceiverCounts:
        with self._lock:
            return ReceiverCounts(**asdict(self._counts))


class HeartbeatReceiver:
    """Serves one UDP socket on two background threads until ``stop``.

    ``port=0`` binds an ephemeral port; ``address`` tells which, once started.
    """

    def __init__(
        self,
        processor: HeartbeatProcessor,
        key: bytes,
        replay_guard: ReplayGuard,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        poll_interval: float = 0.2,
        refusals: RefusalLog | None = None,
        hosts: HostRegistry | None = None,
        use_recvmmsg: bool = True,
        bound: socket.socket | None = None,
        versions: PeerVersions | None = None,
    ) -> None:
        """``bound``: a socket ``bind_heartbeats`` bound earlier (``lbaas serve`` binds
        every port before the API answers), used instead of binding ``host:port``;
        ``versions`` is told the wire version each accepted host heartbeat states."""
        self._processor = processor
        self._versions = versions
        self._bound = bound
        self._hosts = hosts
        self._key = key
        self._guard = replay_guard
        self._bind = (host, port)
        self._poll_interval = poll_interval
        self._stopping = threading.Event()
        self._socket: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._queue: queue.Queue[tuple[Envelope, str]] = queue.Queue(QUEUE_SIZE)
        self.refusals = refusals if refusals is not None else RefusalLog()
        self.counters = ReceiverCounters()
        self._recent = RecentTags()
        self._use_recvmmsg = use_recvmmsg

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the receiver is bound to."""
        if self._socket is None:
            raise RuntimeError("heartbeat receiver is not started")
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Bind the socket and start serving it."""
        if self._threads:
            raise RuntimeError("heartbeat receiver already started")
        sock = self._bound if self._bound is not None else bind_heartbeats(*self._bind)
        self._bound = None  # closed by stop(): a restart binds again
        sock.setblocking(False)
        self._socket = sock
        self._stopping.clear()
        self._threads = [
            threading.Thread(target=self._receive, args=(sock,), name="heartbeat-receiver"),
            threading.Thread(target=self._work, name="heartbeat-processor"),
        ]
        for thread in self._threads:
            thread.daemon = True
            thread.start()
        log.info("receiving heartbeats on %s:%d", *self.address)

    def stop(self) -> None:
        """Stop serving and close the socket; datagrams not yet processed are dropped."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        self._threads = []
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> HeartbeatReceiver:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def handle_datagram(self, datagram: bytes, sender: str) -> None:
        """Run one datagram through the gates and, if it passes them all, process it."""
        envelope = self.admit(datagram, sender)
        if envelope is not None:
            self.process(envelope, sender)

    def admit(self, datagram: bytes, sender: str) -> Envelope | None:
        """The receive loop's gates, each refusal counted at once: an exact copy of a
        recent heartbeat, size and signature, then this process's replay guard."""
        refusal = self._cheap_refusal(datagram)
        if refusal == "rejected_replay":
            self._refuse(refusal, sender, "a copy of a heartbeat already received")
            return None
        if refusal is not None:
            self._refuse(refusal, sender, "not a heartbeat signed with our key")
            return None
        return self._admit_authentic(datagram, sender)

    def _cheap_refusal(self, datagram: bytes) -> CountName | None:
        """Why ``datagram`` is refused without parsing anything, or None if it is authentic."""
        if datagram[-_TAG_LEN:] in self._recent:
            return "rejected_replay"
        if not authentic(datagram, self._key):
            return "rejected_signature"
        return None

    def _admit_authentic(self, datagram: bytes, sender: str) -> Envelope | None:
        """Decode an authentic datagram's header and run the replay guard."""
        try:
            envelope = decode(datagram)
        except HeartbeatRejected as exc:
            self._refuse("malformed", sender, exc)
            return None
        try:
            self._guard.check(envelope)
        except HeartbeatLate as exc:
            self._refuse("rejected_late", sender, exc)
            return None
        except HeartbeatRejected as exc:
            self._recent.add(datagram[-_TAG_LEN:])
            self._refuse("rejected_replay", sender, exc)
            return None
        self._recent.add(datagram[-_TAG_LEN:])
        return envelope

    def process(self, envelope: Envelope, sender: str) -> None:
        """The processing loop's part: decode the payload and apply it."""
        if is_host_payload(envelope.payload):
            self._process_host(envelope, sender)
            return
        try:
            amphora_id, report = from_payload(envelope.payload)
        except HeartbeatRejected as exc:
            self._refuse("malformed", sender, exc)
            return
        outcome = self._processor.process(
            AmphoraId(amphora_id), envelope.epoch, report, envelope.sequence
        )
        if outcome is HeartbeatOutcome.UNKNOWN_AMPHORA:
            self.counters.bump("ignored")
        else:
            self.counters.bump("accepted")

    def _process_host(self, envelope: Envelope, sender: str) -> None:
        """A host heartbeat: the agent itself announcing its address, zone and load."""
        try:
            seen = from_host_payload(envelope.payload, envelope.sender)
        except HeartbeatRejected as exc:
            self._refuse("malformed", sender, exc)
            return
        if self._hosts is not None and self._hosts.record(
            seen, envelope.epoch, envelope.sequence, time.time()
        ):
            self.counters.bump("accepted")
            if self._versions is not None:
                self._versions.record(seen.host_id, seen.wire_version or UNSTATED)
        else:
            self.counters.bump("ignored")

    def _receive(self, sock: socket.socket) -> None:
        batch = DatagramBatch(self._use_recvmmsg)
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        tally = _RefusalTally()
        while not self._stopping.is_set():
            try:
                if poller.poll(self._poll_interval * 1000):
                    self._drain(sock, batch, tally)
            except Exception:  # the top of the receive loop: log, count, serve the next
                self.counters.bump("failed")
                log.exception("heartbeat could not be received")
            tally.flush(self)

    def _drain(self, sock: socket.socket, batch: DatagramBatch, tally: _RefusalTally) -> None:
        """Take what waits on the socket, a batch at a time, through the gates."""
        for _ in range(_BURST_BATCHES):
            count = batch.receive(sock)
            if count == 0:
                return
            for index in range(count):
                datagram = batch.datagram(index)
                refusal = self._cheap_refusal(datagram)
                if refusal is not None:  # counted in the tally, its sender read once
                    tally.counts[refusal] += 1
                    tally.last = (refusal, batch, index)
                    continue
                address, port = batch.peer(index)
                envelope = self._admit_authentic(datagram, address)
                if envelope is None:
                    continue
                try:
                    self._queue.put_nowait((envelope, f"{address}:{port}"))
                except queue.Full:
                    self.counters.bump("dropped")
            tally.name_last_sender()

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                envelope, sender = self._queue.get(timeout=self._poll_interval)
            except queue.Empty:
                continue
            try:
                self.process(envelope, sender)
            except Exception:  # the top of the processing loop: log, count, serve the next
                self.counters.bump("failed")
                log.exception("heartbeat from %s could not be processed", sender)

    def _refuse(self, counter: CountName, sender: str, reason: object) -> None:
        self.counters.bump(counter)
        self.refusals.note(counter, sender, reason)


class _RefusalTally:
    """Refusals of the receive loop not yet added to the counters and the refusal log:
    a flood costs a dictionary increment per datagram and one lock per drained burst."""

    def __init__(self) -> None:
        self.counts: dict[CountName, int] = {"rejected_signature": 0, "rejected_replay": 0}
        self.last: tuple[CountName, DatagramBatch, int] | None = None
        self._sender = ("rejected_signature", "?")

    def name_last_sender(self) -> None:
        """Read the last refused datagram's source before its batch is overwritten."""
        if self.last is not None:
            kind, batch, index = self.last
            address, port = batch.peer(index)
            self._sender = (kind, f"{address}:{port}")
            self.last = None

    def flush(self, receiver: HeartbeatReceiver) -> None:
        self.name_last_sender()
        for kind, count in self.counts.items():
            if count:
                receiver.counters.bump(kind, count)
                why = _REASONS[kind]
                sender = self._sender[1] if self._sender[0] == kind else "?"
                receiver.refusals.note(kind, sender, why, count)
                self.counts[kind] = 0


_REASONS: dict[CountName, str] = {
    "rejected_signature": "not a heartbeat signed with our key",
    "rejected_replay": "a copy of a heartbeat already received",
}
