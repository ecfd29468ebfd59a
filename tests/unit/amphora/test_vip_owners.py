"""``vip_owners`` on real sockets and the real ``/proc``: a second process listening on
the same address and port through ``SO_REUSEPORT`` (what a HAProxy left running does) is
named with its pid and command line; the caller's own family is not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from lbaas.amphora.vip_owners import foreign_listeners, listening_inodes

_STRAY = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
sys.stdin.read()
"""


def _listener(port: int = 0) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def test_a_second_listener_on_the_port_is_foreign() -> None:
    with _listener() as own:
        port = own.getsockname()[1]
        _ours, alone = foreign_listeners(os.getpid(), "127.0.0.1", port)
        assert alone == []
        stray = subprocess.Popen(
            [sys.executable, "-c", _STRAY, str(port), "stray-marker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert stray.stdout is not None and stray.stdout.readline() == "listening\n"
            ours, foreign = foreign_listeners(os.getpid(), "127.0.0.1", port)
            # The stray is this test's child: seen as the "master's" family it is ours.
            assert stray.pid in ours
            _ours, foreign = foreign_listeners(stray.pid, "127.0.0.1", port)
            assert [p.pid for p in foreign] == [os.getpid()]
            assert "pytest" in foreign[0].command or "python" in foreign[0].command
            _ours, foreign = foreign_listeners(1, "127.0.0.1", port)
            pids = sorted(p.pid or 0 for p in foreign)
            assert pids == sorted([os.getpid(), stray.pid])
            named = next(p for p in foreign if p.pid == stray.pid)
            assert named.command.endswith(f"{port} stray-marker")
        finally:
            stray.kill()
            stray.communicate()


def test_only_listening_sockets_on_that_address_count(tmp_path: Path) -> None:
    with _listener() as own:
        port = own.getsockname()[1]
        net = Path("/proc/self/net")
        assert len(listening_inodes(net, "127.0.0.1", port)) == 1
        assert listening_inodes(net, "127.0.0.2", port) == set()
        with socket.create_connection(("127.0.0.1", port)):
            assert len(listening_inodes(net, "127.0.0.1", port)) == 1  # not the connection
    # A table as an older kernel or another namespace may hold: a v4-mapped v6 listener.
    (tmp_path / "tcp6").write_text(
        "  sl  local_address                         remote_address  st ...\n"
        "   0: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000"
        " 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n"
    )
    assert listening_inodes(tmp_path, "127.0.0.1", 8080) == {4242}
