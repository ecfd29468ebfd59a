"""Fakes for the agent's unit tests: a runtime API that records commands, config texts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lbaas.agent.runtime_api import RuntimeApi, RuntimeApiError

STAT_HEADER = "# pxname,svname,scur,slim,stot,bin,bout,ereq,status,weight,"


class FakeRuntime:
    """Answers runtime API commands from canned text and records every command."""

    def __init__(self) -> None:
        self.commands: list[tuple[Path, str]] = []
        self.stat_rows: list[str] = []
        self.pid = "100"
        self.refuse: set[str] = set()
        self.reachable = True

    def factory(self) -> Callable[[Path], RuntimeApi]:
        def make(path: Path) -> RuntimeApi:
            return RuntimeApi(lambda command: self._answer(path, command))

        return make

    def sets(self) -> list[str]:
        return [c for _, c in self.commands if c.startswith("set ")]

    def _answer(self, path: Path, command: str) -> str:
        if not self.reachable:
            raise RuntimeApiError(f"{path}: connection refused")
        self.commands.append((path, command))
        if command == "show info":
            return f"Name: HAProxy\nPid: {self.pid}\n"
        if command == "show stat":
            return "\n".join([STAT_HEADER, *self.stat_rows, ""])
        if command == "show servers state":
            return "1\n# be_id be_name srv_id srv_name\n3 be_p 1 srv_m\n"
        if any(command.startswith(prefix) for prefix in self.refuse):
            return "No such server.\n\n"
        return "\n"


def make_config(
    directory: Path,
    *,
    weight: int = 1,
    disabled: bool = False,
    timeout_client: str = "50s",
    port: int = 8080,
) -> str:
    """A small configuration in the renderer's shape, with quoted paths."""
    flag = " disabled" if disabled else ""
    return (
        "# rendered for a test\n"
        "global\n"
        f'    stats socket "{directory}/stats.sock" mode 600 level admin expose-fd listeners\n'
        f'    server-state-file "{directory}/server-state"\n'
        "defaults\n"
        "    mode http\n"
        "    load-server-state-from-file global\n"
        f"    timeout client {timeout_client}\n"
        "frontend fe_l1\n"
        f"    bind 127.0.10.5:{port}\n"
        "    default_backend be_p1\n"
        "backend be_p1\n"
        f"    server srv_m1 127.0.0.1:9001 weight {weight}{flag} check inter 2s\n"
        "    server srv_m2 127.0.0.1:9002 weight 1\n"
    )
