"""The UDP heartbeat receiver: authenticate, de-duplicate, decode, hand on.

Agents push one signed datagram per amphora per interval; nothing is acknowledged, so the
receiver must take every datagram on its own merits. It runs three gates in order, each
refusing: the envelope's size and HMAC (a forged, unsigned or garbled datagram), the
replay guard (a datagram this process saw before or out of order; one sent too long ago
is counted apart, as late),
and the payload codec (a genuine, fresh datagram whose payload makes no sense). Only then
does the ``HeartbeatProcessor`` touch the store, so a refused datagram never does; the
store refuses what another health manager already saw newer (``lbaas.health.freshness``).

Refusing must cost far less than accepting, and must not starve genuine heartbeats: an
unauthenticated flood once made the health manager miss real ones and fail healthy
amphorae over. So receiving and processing are two threads. The receive loop only drains
the socket (with a large ``SO_RCVBUF``) and runs the first two gates, which need no
parsing for a forged datagram; what passes goes through a bounded queue to the processing
loop, which decodes the payload and applies it. In front of the hash, a source (address
and port) that keeps failing it is refused unchecked for a while
(``lbaas.health.source_throttle``): an agent never fails it, so it is never throttled,
and a flooding socket costs a dictionary look-up per datagram, so the receive loop drains
the socket faster than it fills and the kernel does not drop genuine heartbeats with the
forged ones; blocked IPv4 sources are even dropped by the kernel before they are queued
(``lbaas.health.kernel_filter``). Refusals are counted per gate (the
remedies differ: signature rejects mean a wrong key or someone probing the port, replay
rejects clock skew or a replay, malformed ones an agent bug) and logged as one summary
line per interval (``lbaas.health.refusals``). The catch-all sits at the top of each loop.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from lbaas.errors import HeartbeatLate, HeartbeatRejected
from lbaas.health.kernel_filter import drop_sources
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor
from lbaas.health.refusals import RefusalLog
from lbaas.health.source_throttle import SourceThrottle
from lbaas.listening import address_refused
from lbaas.model.graph import AmphoraId
from lbaas.wire.heartbeat.envelope import Envelope, ReplayGuard, authentic, decode
from lbaas.wire.heartbeat.host_codec import from_host_payload, is_host_payload
from lbaas.wire.heartbeat.report_codec import from_payload

if TYPE_CHECKING:
    from lbaas.health.fleet import HostRegistry

log = logging.getLogger(__name__)

_BUFFER = 65535
RECEIVE_BUFFER = 16 * 1024 * 1024
"""Bytes asked of the kernel for the socket's receive queue (forced if the process may,
else capped at ``net.core.rmem_max``)."""
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
_THROTTLED_BATCH = 1024
"""Throttled refusals are added to the counters in batches of this many (or when idle)."""
QUEUE_SIZE = 10_000
"""Authenticated heartbeats waiting for the processing loop; beyond it they are dropped."""

CountName = Literal[
    "accepted",
    "rejected_signature",
    "rejected_throttled",
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
    rejected_throttled: int = 0
    """From a source blocked for sending forged datagrams: refused before the hash."""
    rejected_replay: int = 0
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
        return (
            self.rejected_signature
            + self.rejected_throttled
            + self.rejected_replay
            + self.rejected_late
            + self.malformed
        )


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
        throttle: SourceThrottle | None = None,
    ) -> None:
        self._processor = processor
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
        self.throttle = throttle if throttle is not None else SourceThrottle()
        self.counters = ReceiverCounters()
        self.kernel_filtered = 0
        """Sources the socket's kernel filter drops just now."""
        self._filter_state = (0, float("inf"))

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
        family = socket.AF_INET6 if ":" in self._bind[0] else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            _grow_receive_buffer(sock)
            sock.bind(self._bind)
        except OSError as exc:
            sock.close()
            host, port = self._bind[0], self._bind[1]
            raise address_refused(
                "heartbeat", host, port, "health.bind_host/bind_port", exc
            ) from None
        sock.settimeout(self._poll_interval)
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

    def admit(
        self, datagram: bytes, sender: str, source: tuple[str, int] | None = None
    ) -> Envelope | None:
        """The receive loop's gates: size and signature, then this process's replay guard.

        ``source``, the peer's (address, port), is charged with a failed signature."""
        if not authentic(datagram, self._key):
            if source is not None:
                self.throttle.failed(source)
            self._refuse("rejected_signature", sender, "not a heartbeat signed with our key")
            return None
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
            self._refuse("rejected_replay", sender, exc)
            return None
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
        else:
            self.counters.bump("ignored")

    def _receive(self, sock: socket.socket) -> None:
        blocked, throttled = self.throttle.blocked, 0
        while not self._stopping.is_set():
            try:
                try:
                    datagram, peer = sock.recvfrom(_BUFFER)
                except TimeoutError:
                    throttled = self._count_throttled(throttled, None)
                    self._refresh_filter(sock, idle=True)
                    continue
                if blocked(peer):  # the cheap refusal, counted in batches
                    throttled += 1
                    if throttled >= _THROTTLED_BATCH:
                        throttled = self._count_throttled(throttled, peer)
                    continue
                envelope = self.admit(datagram, peer[0], peer)
                if envelope is not None:
                    self._queue.put_nowait((envelope, f"{peer[0]}:{peer[1]}"))
                else:
                    self._refresh_filter(sock, idle=False)
            except queue.Full:
                self.counters.bump("dropped")
            except Exception:  # the top of the receive loop: log, count, serve the next
                self.counters.bump("failed")
                log.exception("heartbeat could not be received")
        self._count_throttled(throttled, None)

    def _refresh_filter(self, sock: socket.socket, *, idle: bool) -> None:
        """Re-install the kernel filter when a source was blocked or (``idle``) a block
        ended."""
        blocks, ends = self._filter_state
        if self.throttle.blocks == blocks and not (idle and time.monotonic() >= ends):
            return
        sources, ends = self.throttle.blocked_sources()
        try:
            self.kernel_filtered = drop_sources(sock, sources)
        except OSError:  # no BPF here: the throttle still refuses them in Python
            log.warning("could not filter blocked heartbeat sources in the kernel", exc_info=True)
        self._filter_state = (self.throttle.blocks, ends)

    def _count_throttled(self, throttled: int, peer: tuple[str, int] | None) -> int:
        """Add ``throttled`` refusals to the counts and the refusal log; returns 0."""
        if throttled:
            self.counters.bump("rejected_throttled", throttled)
            sender = f"{peer[0]}:{peer[1]}" if peer else "a blocked source"
            self.refusals.note(
                "rejected_throttled", sender, "kept sending forged datagrams", throttled
            )
        return 0

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


def _grow_receive_buffer(sock: socket.socket) -> None:
    """Ask for RECEIVE_BUFFER bytes, past ``net.core.rmem_max`` if the process may."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, RECEIVE_BUFFER)
    except OSError:  # not CAP_NET_ADMIN: the kernel caps the request at rmem_max
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
