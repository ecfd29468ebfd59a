"""The socket keeper: a small process holding duplicates of the agent's access-log
listeners, so they outlive the agent (``python -m lbaas.amphora.socket_keeper``).

HAProxy 2.6's ring forwarder reconnects without pause while its log socket refuses: ~380
connects a second per worker, so ten amphorae took a 2-core host to a load of 45 during
an agent restart. A listener whose accept queue nobody drains still completes connects
(the kernel's backlog): the forwarder writes into the socket's buffer and waits. So the
agent hands every listener it makes to this process (``SCM_RIGHTS``, ``keeper_protocol``);
when the agent stops or dies they keep listening, and the next agent takes them back
(``list``) with the connections queued meanwhile, whose lines it then reads.

It never accepts. Every ``CHECK_INTERVAL`` it drops a listener whose path no longer names
it (the amphora deleted, another listener renamed over it), and it exits when its control
path no longer names its own socket, or when it has held nothing with no agent attached
for ``IDLE_GRACE`` seconds. ``--take-over SOCKETS ROOT`` first listens again in place on
every access-log socket of ROOT's amphorae (``listen_in_place``) while an older agent,
which has no keeper, still runs: new connects reach this process, the old agent's
established ones go on until it exits. It logs paths and counts only, to stderr.

Stdlib imports only: it starts in a fraction of a second on a loaded host.
"""

from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from lbaas.amphora import keeper_protocol as wire
from lbaas.amphora.held_log_sockets import listen_in_place, owned_amphorae

log = logging.getLogger("lbaas.log-keeper")

#: Seconds between checks of the held paths and of the control path.
CHECK_INTERVAL = 1.0
#: Seconds with nothing held and no agent attached before the keeper exits.
IDLE_GRACE = 10.0

#: What the keeper holds: path -> (listener, the inode the path had when it was handed in).
Held = dict[Path, tuple[socket.socket, int]]


def take_over(sockets: Path, amphora_root: Path) -> Held:
    """Listen again in place on every access-log socket of ``amphora_root``'s amphorae."""
    held: Held = {}
    owned = owned_amphorae(amphora_root)
    for path in sorted(sockets.glob("*.sock")) if sockets.is_dir() else []:
        if path.stem not in owned or not path.is_socket():
            continue
        try:
            held[path] = (listen_in_place(path, keep_owner_of=path), path.stat().st_ino)
        except OSError as exc:
            log.warning("access-log socket %s not taken over: %s", path, exc)
    return held


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


class SocketKeeper:
    """Holds listeners for the agents that attach on its control socket."""

    def __init__(self, control: Path, held: Held | None = None, idle_grace: float = IDLE_GRACE):
        self._held: Held = dict(held or {})
        self._control = control
        # 0600 before it has its name: only the agent's user may hand in or take listeners.
        self._listener = listen_in_place(control, kind=socket.SOCK_SEQPACKET, mode=0o600)
        self._control_inode = control.stat().st_ino
        self._clients: set[socket.socket] = set()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._idle_grace = idle_grace
        self._idle_since = time.monotonic()
        self.stopping = False

    def serve(self) -> None:
        """Answer agents and check the held paths until there is nothing left to do."""
        log.info(
            "log keeper %d ready on %s, holding %d", os.getpid(), self._control, len(self._held)
        )
        checked = time.monotonic()
        try:
            while not self.stopping:
                for key, _ in self._selector.select(CHECK_INTERVAL):
                    if key.fileobj is self._listener:
                        self._attach()
                    else:
                        self._answer(key.fileobj)  # type: ignore[arg-type]
                if time.monotonic() - checked >= CHECK_INTERVAL:
                    checked = time.monotonic()
                    self.stopping = self.stopping or not self._check()
        finally:
            self._close()

    def _check(self) -> bool:
        """Drop what its path no longer names; whether to go on."""
        if _inode(self._control) != self._control_inode:
            log.info("control path %s is gone or replaced: exiting", self._control)
            return False
        gone = [path for path, (_, inode) in self._held.items() if _inode(path) != inode]
        self._drop(gone, "no longer named by its path")
        if self._held or self._clients:
            return True
        if time.monotonic() - self._idle_since < self._idle_grace:
            return True
        log.info("nothing held and no agent attached: exiting")
        return False

    def _attach(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        self._clients.add(conn)
        self._selector.register(conn, selectors.EVENT_READ)

    def _detach(self, conn: socket.socket) -> None:
        self._selector.unregister(conn)
        self._clients.discard(conn)
        conn.close()
        self._idle_since = time.monotonic()

    def _answer(self, conn: socket.socket) -> None:
        try:
            body, fds = wire.receive(conn)
        except OSError:  # the agent went away (or spoke nonsense): it is detached
            self._detach(conn)
            return
        try:
            self._request(conn, body, fds)
        except OSError as exc:
            log.warning("control request failed: %s", exc)
            self._detach(conn)

    def _request(self, conn: socket.socket, body: dict[str, Any], fds: list[int]) -> None:
        op, paths = body.get("op"), [Path(p) for p in body.get("paths", [])]
        if op == "hold":
            self._hold(paths, fds)
        else:
            for fd in fds:  # only a hold brings listeners
                os.close(fd)
        if op == "drop":
            self._drop(paths, "dropped by the agent")
        elif op == "list":
            self._list(conn)
            return
        elif op == "stop":
            self.stopping = True
        elif op != "hold":
            wire.send(conn, {"error": f"unknown op {op!r}"})
            return
        wire.send(conn, {"held": len(self._held)})

    def _hold(self, paths: list[Path], fds: list[int]) -> None:
        for index, fd in enumerate(fds):
            listener = socket.socket(fileno=fd)
            inode = _inode(paths[index]) if index < len(paths) else None
            if inode is None:
                listener.close()
                continue
            old = self._held.pop(paths[index], None)
            if old is not None:
                old[0].close()
            self._held[paths[index]] = (listener, inode)

    def _drop(self, paths: list[Path], why: str) -> None:
        for path in paths:
            entry = self._held.pop(path, None)
            if entry is not None:
                entry[0].close()
                log.info("dropped %s: %s", path, why)

    def _list(self, conn: socket.socket) -> None:
        self._drop([p for p, (_, ino) in self._held.items() if _inode(p) != ino], "gone")
        runs = wire.batches(sorted(self._held))
        for number, run in enumerate(runs):
            more = number < len(runs) - 1
            fds = [self._held[path][0].fileno() for path in run]
            wire.send(conn, {"paths": [str(p) for p in run], "more": more}, fds)

    def _close(self) -> None:
        for conn in list(self._clients):
            self._detach(conn)
        self._drop(sorted(self._held), "the keeper stops")
        self._selector.close()
        self._listener.close()
        if _inode(self._control) == self._control_inode:
            self._control.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lbaas.amphora.socket_keeper")
    parser.add_argument("--control", required=True, help="the control socket's path")
    parser.add_argument("--idle-grace", type=float, default=IDLE_GRACE)
    parser.add_argument("--take-over", nargs=2, metavar=("SOCKETS", "AMPHORAE"))
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s log-keeper %(message)s"
    )
    control = Path(args.control)
    if wire.answers(str(control)):
        log.info("a keeper already answers on %s", control)
        return 0
    held = take_over(Path(args.take_over[0]), Path(args.take_over[1])) if args.take_over else {}
    keeper = SocketKeeper(control, held, args.idle_grace)

    def stop(*_: object) -> None:
        keeper.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    keeper.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
