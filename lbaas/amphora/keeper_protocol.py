"""The socket keeper's control protocol: one JSON object per SOCK_SEQPACKET message, with
the listeners it names passed alongside as ``SCM_RIGHTS`` descriptors.

Requests (agent → keeper), each answered by one message unless said otherwise:

- ``{"op": "hold", "paths": [...]}`` with one listener per path, in order: keep a
  duplicate of each (replacing one kept for the same path). Answer ``{"held": n}``.
- ``{"op": "drop", "paths": [...]}``: close what is kept for them. Answer ``{"held": n}``.
- ``{"op": "list"}``: every kept listener, in answers of ``{"paths": [...], "more": b}``
  with their descriptors, the last with ``more`` false. The keeper keeps its own.
- ``{"op": "stop"}``: answer ``{"held": n}``, then close everything and exit.

A packet socket keeps each message whole with its descriptors; the kernel passes at most
253 descriptors in one message (``SCM_MAX_FD``), so batches stay at ``BATCH``. Stdlib
only: the keeper imports this at its start.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from typing import Any

#: Descriptors per message, under the kernel's 253.
BATCH = 200
#: Largest message: 200 paths of at most 108 bytes, JSON-quoted, fit with room to spare.
MESSAGE_BYTES = 1 << 16
#: The keeper's control socket, in the agent's amphora root.
CONTROL_NAME = ".log-keeper.sock"


class ProtocolError(OSError):
    """A message the other side should not have sent (closed, truncated, not JSON)."""


def send(conn: socket.socket, body: dict[str, Any], fds: Sequence[int] = ()) -> None:
    socket.send_fds(conn, [json.dumps(body).encode()], list(fds))


def receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The next message and the descriptors that came with it (the receiver's to close)."""
    data, fds, flags, _ = socket.recv_fds(conn, MESSAGE_BYTES, BATCH)
    try:
        if not data:
            raise ProtocolError("the other side closed the connection")
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise ProtocolError("message or descriptors truncated")
        body = json.loads(data)
        if not isinstance(body, dict):
            raise ProtocolError("a message is a JSON object")
    except (ProtocolError, ValueError) as exc:
        for fd in fds:
            os.close(fd)
        raise ProtocolError(str(exc)) from exc
    return body, fds


def batches(items: Sequence[Any]) -> list[Sequence[Any]]:
    """``items`` cut into runs of at most ``BATCH`` (one empty run when there are none)."""
    return [items[i : i + BATCH] for i in range(0, len(items), BATCH)] or [items[:0]]


def answers(path: str) -> bool:
    """Whether a keeper accepts on the control socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True
