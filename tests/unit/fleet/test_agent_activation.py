"""Reading systemd's socket-activation variables: only for this process, never passed on."""

from __future__ import annotations

import socket

import pytest

from lbaas.errors import ConfigError
from lbaas.host.activation import inherited_socket


def test_without_the_variables_the_agent_binds_its_own() -> None:
    env = {"PATH": "/usr/bin"}
    assert inherited_socket(env, pid=42) is None
    assert env == {"PATH": "/usr/bin"}


def test_descriptors_meant_for_another_process_are_ignored_and_not_passed_on() -> None:
    env = {"LISTEN_FDS": "1", "LISTEN_PID": "41", "LISTEN_FDNAMES": "agent", "HOME": "/"}
    assert inherited_socket(env, pid=42) is None
    assert env == {"HOME": "/"}  # HAProxy and keepalived, started later, never see them


def test_more_than_one_socket_is_a_configuration_error() -> None:
    env = {"LISTEN_FDS": "2", "LISTEN_PID": "42"}
    with pytest.raises(ConfigError, match="LISTEN_FDS=2"):
        inherited_socket(env, pid=42)
    assert env == {}


def _given(sock: socket.socket) -> socket.socket | None:
    """``sock`` passed as the manager would (its fd in place of 3)."""
    sock.set_inheritable(True)
    env = {"LISTEN_FDS": "1", "LISTEN_PID": "42"}
    return inherited_socket(env, pid=42, first_fd=sock.fileno())


def test_a_listening_tcp_socket_is_taken_and_not_inherited_further() -> None:
    with socket.create_server(("127.0.0.1", 0)) as passed:
        taken = _given(passed)
        assert taken is not None
        try:
            assert taken.getsockname() == passed.getsockname()
            assert not passed.get_inheritable()  # HAProxy, keepalived never get it
        finally:
            taken.detach()  # one descriptor, closed by ``passed``


@pytest.mark.parametrize("kind", ["unix", "not listening", "datagram"])
def test_anything_but_a_listening_tcp_socket_is_refused(kind: str) -> None:
    if kind == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("")  # an abstract address
        sock.listen()
    elif kind == "datagram":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    else:
        sock = socket.socket()
    with sock, pytest.raises(ConfigError, match="not a listening TCP socket"):
        _given(sock)
