"""The runtime API and master CLI clients, through fake transports."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from lbaas.host.runtime_api import CliSession, MasterCli, RuntimeApi, RuntimeApiError

SHOW_PROC = (
    "#<PID>          <type>          <reloads>       <uptime>        <version>      \n"
    "17343           master          2 [failed: 1]   0d00h00m04s     2.6.12-1+deb12u4\n"
    "# workers\n"
    "17394           worker          0               0d00h00m01s     2.6.12-1+deb12u4\n"
    "17346           worker          1               0d00h00m04s     2.6.12-1+deb12u4\n"
    "# programs\n\n"
)


def test_show_stat_is_parsed_by_header() -> None:
    text = "# pxname,svname,status,weight,\nbe_1,srv_a,UP,5,\nfe_1,FRONTEND,OPEN,,\n\n"
    rows = RuntimeApi(lambda command: text).show_stat()
    assert rows[0]["pxname"] == "be_1" and rows[0]["weight"] == "5"
    assert rows[1]["svname"] == "FRONTEND" and rows[1]["status"] == "OPEN"


def test_show_info_needs_a_pid() -> None:
    assert RuntimeApi(lambda c: "Name: HAProxy\nPid: 42\n").show_info()["Pid"] == "42"
    with pytest.raises(RuntimeApiError):
        RuntimeApi(lambda c: "Unknown command\n").show_info()


def test_set_commands_and_refusals() -> None:
    sent: list[str] = []

    def transport(command: str) -> str:
        sent.append(command)
        return "No such server.\n\n" if "srv_x" in command else "\n"

    api = RuntimeApi(transport)
    api.set_server_weight("be_1", "srv_a", 7)
    api.set_server_state("be_1", "srv_a", "drain")
    with pytest.raises(RuntimeApiError, match="No such server"):
        api.set_server_weight("be_1", "srv_x", 1)
    assert sent[:2] == ["set server be_1/srv_a weight 7", "set server be_1/srv_a state drain"]


def test_show_proc_reads_reloads_and_workers() -> None:
    sent: list[str] = []

    def transport(command: str) -> str:
        sent.append(command)
        return SHOW_PROC

    table = MasterCli(transport).show_proc()
    assert sent == ["show proc; quit"]
    assert (table.master.pid, table.master.reloads, table.failed_reloads) == (17343, 2, 1)
    assert [w.pid for w in table.workers] == [17394, 17346]
    assert [w.pid for w in table.current_workers] == [17394]


def test_show_proc_without_master_is_an_error() -> None:
    with pytest.raises(RuntimeApiError):
        MasterCli(lambda c: "").show_proc()


def test_worker_stat_goes_through_the_master_to_one_worker() -> None:
    sent: list[str] = []

    def transport(command: str) -> str:
        sent.append(command)
        return "# pxname,svname,stot,\nfe_1,FRONTEND,7,\n"

    rows = MasterCli(transport).worker_stat(17346)
    assert sent == ["@!17346 show stat; quit"] and rows[0]["stot"] == "7"
    with pytest.raises(RuntimeApiError, match="target PID"):
        MasterCli(lambda c: "Can't find the target PID matching the prefix '@!1'\n").worker_stat(1)


def _fake_worker_cli(listening: socket.socket, received: list[str]) -> None:
    """The worker's end of one interactive session: every answer ends with the prompt."""
    sock, _ = listening.accept()
    with sock, sock.makefile("rb") as lines:
        for line in lines:
            command = line.decode().strip()
            received.append(command)
            answer = "Pid: 42\nStopping: 1\n" if command == "show info" else ""
            sock.sendall(f"{answer}\n> ".encode())


def test_a_cli_session_keeps_one_connection_for_many_commands(tmp_path: Path) -> None:
    path = tmp_path / "stats.sock"
    received: list[str] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(str(path))
        listening.listen(1)
        worker = threading.Thread(target=_fake_worker_cli, args=(listening, received))
        worker.start()
        session = CliSession.open(path, idle_limit=20)
        assert session("show info") == "Pid: 42\nStopping: 1\n\n"
        assert RuntimeApi(session).show_info()["Stopping"] == "1"
        session.close()
        worker.join(5)
    assert received == ["prompt", "set timeout cli 20", "show info", "show info"]
    with pytest.raises(RuntimeApiError):
        session("show info")


def test_a_cli_session_to_a_missing_socket_is_a_runtime_api_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeApiError, match="cannot open a CLI session"):
        CliSession.open(tmp_path / "missing.sock")


def test_show_proc_takes_only_ascii_digits_for_pids() -> None:
    answer = (
        "#<PID> <type> <reloads> <uptime> <version>\n"
        "1 master 0 [failed: 0] 0d00h00m01s 2.6\n"
        "² worker 0 0d00h00m01s 2.6\n"
        "7 worker 1² 0d00h00m01s 2.6\n"
    )
    table = MasterCli(lambda _command: answer).show_proc()
    assert [(w.pid, w.reloads) for w in table.workers] == [(7, 1)]
