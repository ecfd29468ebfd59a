"""Access-log sockets held while no agent reads them (real UNIX sockets).

HAProxy 2.6's ring forwarder connects again at once when refused (some 380 connects a
second per worker while the agent is away). A starting agent listens again on every
socket nothing listens on: a forwarder's connection and its lines wait in the socket
until the adopting reader takes the listener over; what no amphora claims is removed.
"""

from __future__ import annotations

import socket
from pathlib import Path

from lbaas.amphora.access_log import AccessLogs
from lbaas.amphora.held_log_sockets import HeldLogSockets, refuses
from tests.support.waiting import wait_until


def _dead_socket(path: Path, mode: int = 0o660) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))  # closed without unlinking, as a SIGKILLed agent leaves it
    path.chmod(mode)


def test_lines_sent_while_no_agent_read_them_reach_the_adopting_reader(tmp_path: Path) -> None:
    sockets, root = tmp_path / "sockets", tmp_path / "amphorae"
    sockets.mkdir()
    for amphora in ("kept", "gone"):  # this agent's amphorae (``gone`` deleted meanwhile)
        (root / amphora).mkdir(parents=True)
    kept, gone, others = sockets / "kept.sock", sockets / "gone.sock", sockets / "other.sock"
    _dead_socket(kept, 0o640)
    _dead_socket(gone)
    _dead_socket(others)  # another agent's, restarting: not this agent's to hold
    assert refuses(kept) and refuses(gone)  # what HAProxy's forwarder meets without this

    held = HeldLogSockets.hold_stale(sockets, root)
    assert not refuses(kept) and not refuses(gone) and refuses(others)
    assert kept.stat().st_mode & 0o777 == 0o640  # HAProxy's group keeps its access
    forwarder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    forwarder.connect(str(kept))
    forwarder.sendall(b"sent while away\n")  # before any agent reads

    logs = AccessLogs(tmp_path / "logs", sockets, max_bytes=1 << 20, backups=0, held=held)
    try:
        logs.ensure("kept", "lb-kept", kept)  # adoption takes the held listener over
        forwarder.sendall(b"sent after\n")
        forwarder.close()
        wait_until(lambda: logs.lines("kept") >= 2, 10.0, "both lines read")
        assert (tmp_path / "logs" / "lb-kept.log").read_bytes() == b"sent while away\nsent after\n"
        assert logs.release_held() == [gone]  # no amphora claimed it: removed
        assert not gone.exists() and kept.exists()
    finally:
        logs.close_all()


def test_a_socket_another_agent_listens_on_is_not_held(tmp_path: Path) -> None:
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    other = AccessLogs(tmp_path / "other", sockets, max_bytes=1 << 20, backups=0)
    other.ensure("live", "lb-live", sockets / "live.sock")
    (tmp_path / "amphorae" / "live").mkdir(parents=True)  # even one named as its own
    try:
        held = HeldLogSockets.hold_stale(sockets, tmp_path / "amphorae")
        assert held.take(sockets / "live.sock") is None
        assert held.release() == []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(sockets / "live.sock"))
            conn.sendall(b"to the live agent\n")
        wait_until(lambda: other.lines("live") >= 1, 10.0, "the live agent's line")
        assert (tmp_path / "other" / "lb-live.log").read_bytes() == b"to the live agent\n"
    finally:
        other.close_all()
