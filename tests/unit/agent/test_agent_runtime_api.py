"""The runtime API and master CLI clients, through fake transports."""

from __future__ import annotations

import pytest

from lbaas.agent.runtime_api import MasterCli, RuntimeApi, RuntimeApiError

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
