"""The agent's side of the socket keeper (``socket_keeper``): attach, hand listeners in,
drop them, take them all back at a start.

An agent stays attached for its whole life (one connection, one request at a time): the
keeper does not exit while an agent is attached. A keeper that fails mid-way costs the
next restart its held sockets, not this agent its logs: the error is logged once and the
client goes quiet.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lbaas.amphora import keeper_protocol as wire

log = logging.getLogger(__name__)

#: Seconds a started keeper has to answer on its control socket.
START_WAIT = 10.0
_POLL = 0.02


class KeeperClient:
    """One agent's connection to its keeper."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._broken = False

    @classmethod
    def connect(cls, control: Path) -> KeeperClient | None:
        """Attached to the keeper answering at ``control``; None when none answers."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(str(control))
        except OSError:
            conn.close()
            return None
        return cls(conn)

    def _call(self, body: dict[str, object], fds: list[int] | None = None) -> None:
        if self._broken:
            return
        try:
            with self._lock:
                wire.send(self._conn, body, fds or [])
                answer, extra = wire.receive(self._conn)
            for fd in extra:
                socket.socket(fileno=fd).close()
            if "error" in answer:
                raise wire.ProtocolError(str(answer["error"]))
        except OSError as exc:
            self._broken = True
            log.warning("the access-log socket keeper stopped answering: %s", exc)

    def hold(self, items: Iterable[tuple[Path, socket.socket]]) -> None:
        """Hand ``(path, listener)`` pairs to the keeper (it keeps duplicates)."""
        pairs = list(items)
        for run in wire.batches(pairs):
            if run:
                self._call(
                    {"op": "hold", "paths": [str(p) for p, _ in run]}, [s.fileno() for _, s in run]
                )

    def drop(self, paths: Iterable[Path]) -> None:
        for run in wire.batches([str(p) for p in paths]):
            if run:
                self._call({"op": "drop", "paths": list(run)})

    def listeners(self) -> dict[Path, socket.socket]:
        """Every listener the keeper holds, by path (the caller's to close; the keeper
        keeps its own). Empty when the keeper fails."""
        taken: dict[Path, socket.socket] = {}
        try:
            with self._lock:
                wire.send(self._conn, {"op": "list"})
                more = True
                while more:
                    body, fds = wire.receive(self._conn)
                    paths = body.get("paths", [])
                    for index, fd in enumerate(fds):
                        listener = socket.socket(fileno=fd)
                        if index < len(paths):
                            taken[Path(paths[index])] = listener
                        else:  # a descriptor without its path: of no use
                            listener.close()
                    more = bool(body.get("more"))
        except OSError as exc:
            self._broken = True
            log.warning("the access-log socket keeper listed nothing: %s", exc)
        return taken

    def stop_keeper(self) -> None:
        """Have the keeper close what it holds and exit."""
        self._call({"op": "stop"})

    def close(self) -> None:
        """Detach (the keeper keeps what it holds)."""
        self._conn.close()


def attach(
    control: Path, start: Callable[[], object], wait: float = START_WAIT
) -> KeeperClient | None:
    """Attached to the keeper at ``control``, started with ``start`` when none answers;
    None when the started one does not answer within ``wait`` seconds."""
    client = KeeperClient.connect(control)
    if client is not None:
        return client
    start()
    deadline = time.monotonic() + wait
    while (client := KeeperClient.connect(control)) is None:
        if time.monotonic() > deadline:
            log.warning("no access-log socket keeper answers on %s", control)
            return None
        time.sleep(_POLL)
    return client
