"""Whatever bytes a tool prints, the agent reads them and answers with a clear error."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.errors import InvalidRenderedConfig
from lbaas.host.haproxy_exec import HaproxyLauncher
from lbaas.host.real import RealHostOps
from lbaas.host.runtime_api import RuntimeApi, unix_socket_transport

# What haproxy -c printed for ``http-check expect status ２００``: one byte of the digit.
HALF_A_DIGIT = b"[ALERT] parsing [haproxy.cfg:9] : invalid character '\xef' in the list\n"


def _tool(tmp_path: Path, output: bytes, status: int) -> Path:
    """An executable that prints ``output`` on stderr and exits with ``status``."""
    (tmp_path / "output").write_bytes(output)
    tool = tmp_path / "tool"
    tool.write_text(f"#!/bin/sh\ncat '{tmp_path / 'output'}' >&2\nexit {status}\n")
    tool.chmod(0o755)
    return tool


def test_haproxy_c_output_that_is_not_utf8_is_a_validation_error(tmp_path: Path) -> None:
    launcher = HaproxyLauncher(str(_tool(tmp_path, HALF_A_DIGIT, 1)))
    config = tmp_path / "haproxy.cfg"
    config.write_text("global\n")
    with pytest.raises(InvalidRenderedConfig) as refused:
        launcher.validate(config, tmp_path)
    assert "invalid character '\ufffd'" in (refused.value.operator_message or "")


def test_ip_output_that_is_not_utf8_is_read(tmp_path: Path) -> None:
    host = RealHostOps(ip_binary=str(_tool(tmp_path, b"\xff\xfe", 0)))
    assert host.run_in_namespace("ns", ["true"]).returncode == 0  # ran through the tool
    assert host.bridge_ports("br") == []  # the tool says nothing on stdout: no bridge


@pytest.fixture
def stats_socket(tmp_path: Path) -> Iterator[Path]:
    """A unix socket answering every command with a stat line holding invalid UTF-8."""
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(b"# pxname,svname,status,\nfe_\xef\xbc,FRONTEND,OPEN,\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        thread.join(5)
        server.close()


def test_runtime_api_answers_that_are_not_utf8_are_read(stats_socket: Path) -> None:
    rows = RuntimeApi(unix_socket_transport(stats_socket)).show_stat()
    assert rows == [{"pxname": "fe_\ufffd", "svname": "FRONTEND", "status": "OPEN"}]
