"""The UDP heartbeat receiver: authenticate, de-duplicate, decode, hand on.

Agents push one signed datagram per amphora per interval; nothing is acknowledged, so the
receiver must take every datagram on its own merits. It runs three gates in order, each
refusing with ``HeartbeatRejected``: the envelope's HMAC (a forged, unsigned or garbled
datagram), the replay guard (a datagram seen before, out of order, or sent too long ago),
and the payload codec (a genuine, fresh datagram whose payload makes no sense). Only then
does the ``HeartbeatProcessor`` touch the store, so a rejected datagram never does.

Each gate has its own counter, because the remedies differ: signature rejects mean a wrong
key or someone probing the port, replay rejects mean clock skew or a replay, malformed ones
an agent bug. The one catch-all sits at the top of the receive loop, where a failure of
the store is logged with the sender and counted, and the next datagram is served.
"""

from __future__ import annotations

import logging
import socket
import threading
from dataclasses import asdict, dataclass
from typing import Literal

from lbaas.errors import HeartbeatRejected
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor
from lbaas.heartbeat.envelope import ReplayGuard, open_envelope
from lbaas.heartbeat.report_codec import from_payload
from lbaas.model.graph import AmphoraId

log = logging.getLogger(__name__)

_BUFFER = 65535

CountName = Literal[
    "accepted", "rejected_signature", "rejected_replay", "malformed", "ignored", "failed"
]


@dataclass
class ReceiverCounts:
    """How many datagrams ended which way, since the receiver started."""

    accepted: int = 0
    rejected_signature: int = 0
    rejected_replay: int = 0
    malformed: int = 0
    ignored: int = 0
    """Genuine heartbeats of an amphora the store does not know."""
    failed: int = 0
    """Genuine heartbeats whose processing raised (a store error, say)."""

    @property
    def rejected(self) -> int:
        return self.rejected_signature + self.rejected_replay + self.malformed


class ReceiverCounters:
    """Thread-safe ``ReceiverCounts``: bumped by the receive loop, read by anyone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = ReceiverCounts()

    def bump(self, name: CountName) -> None:
        with self._lock:
            setattr(self._counts, name, getattr(self._counts, name) + 1)

    def snapshot(self) -> ReceiverCounts:
        with self._lock:
            return ReceiverCounts(**asdict(self._counts))


class HeartbeatReceiver:
    """Serves one UDP socket on a background thread until ``stop``.

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
    ) -> None:
        self._processor = processor
        self._key = key
        self._guard = replay_guard
        self._bind = (host, port)
        self._poll_interval = poll_interval
        self._stopping = threading.Event()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.counters = ReceiverCounters()

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the receiver is bound to."""
        if self._socket is None:
            raise RuntimeError("heartbeat receiver is not started")
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Bind the socket and start serving it."""
        if self._thread is not None:
            raise RuntimeError("heartbeat receiver already started")
        family = socket.AF_INET6 if ":" in self._bind[0] else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.bind(self._bind)
        except OSError:
            sock.close()
            raise
        sock.settimeout(self._poll_interval)
        self._socket = sock
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), name="heartbeat-receiver", daemon=True
        )
        self._thread.start()
        log.info("receiving heartbeats on %s:%d", *self.address)

    def stop(self) -> None:
        """Stop serving and close the socket; datagrams not yet read are dropped."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
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
        try:
            envelope = open_envelope(datagram, self._key)
        except HeartbeatRejected as exc:
            self._reject("rejected_signature", sender, exc)
            return
        try:
            self._guard.check(envelope)
        except HeartbeatRejected as exc:
            self._reject("rejected_replay", sender, exc)
            return
        try:
            amphora_id, report = from_payload(envelope.payload)
        except HeartbeatRejected as exc:
            self._reject("malformed", sender, exc)
            return
        outcome = self._processor.process(AmphoraId(amphora_id), envelope.epoch, report)
        if outcome is HeartbeatOutcome.UNKNOWN_AMPHORA:
            self.counters.bump("ignored")
        else:
            self.counters.bump("accepted")

    def _serve(self, sock: socket.socket) -> None:
        while not self._stopping.is_set():
            sender = "?"
            try:
                try:
                    datagram, peer = sock.recvfrom(_BUFFER)
                except TimeoutError:
                    continue
                sender = f"{peer[0]}:{peer[1]}"
                self.handle_datagram(datagram, sender)
            except Exception:  # the top of the receive loop: log, count, serve the next
                self.counters.bump("failed")
                log.exception("heartbeat from %s could not be processed", sender)

    def _reject(self, counter: CountName, sender: str, exc: HeartbeatRejected) -> None:
        self.counters.bump(counter)
        log.warning("heartbeat from %s rejected: %s", sender, exc)
