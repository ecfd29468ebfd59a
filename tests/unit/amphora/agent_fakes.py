"""Fakes for the agent's unit tests: a runtime API that records commands, config texts."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from lbaas.host.runtime_api import RuntimeApi, RuntimeApiError
from lbaas.wire.amphora import SPEC_FORMAT, HaproxyFacts, ServerSetting

STAT_HEADER = "# pxname,svname,scur,slim,stot,bin,bout,ereq,status,weight,"


class FakeRuntime:
    """Answers runtime API commands from canned text and records every command."""

    def __init__(self) -> None:
        self.commands: list[tuple[Path, str]] = []
        self.stat_rows: list[str] = []
        self.pid = "100"
        self.refuse: set[str] = set()
        self.reachable = True
        # When set, ``show stat`` waits for it (a slow statistics read); answered ones counted.
        self.stat_gate: threading.Event | None = None
        self.stats_answered = 0

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
            gate = self.stat_gate
            if gate is not None:
                gate.wait(30)
            self.stats_answered += 1
            return "\n".join([STAT_HEADER, *self.stat_rows, ""])
        if command == "show servers state":
            return "1\n# be_id be_name srv_id srv_name\n3 be_p 1 srv_m\n"
        if any(command.startswith(prefix) for prefix in self.refuse):
            return "No such server.\n\n"
        return "\n"


class Config(NamedTuple):
    """A configuration text and the facts a controller sends beside it."""

    text: str
    facts: HaproxyFacts


def make_config(
    directory: Path,
    *,
    weight: int = 1,
    disabled: bool = False,
    timeout_client: str = "50s",
    port: int = 8080,
    maxconn: int | None = None,
) -> Config:
    """A small configuration in the renderer's shape, with quoted paths, and its facts."""
    flag = " disabled" if disabled else ""
    global_maxconn = "" if maxconn is None else f"    maxconn {maxconn}\n"
    text = (
        "# rendered for a test\n"
        "global\n"
        f"{global_maxconn}"
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
    # What the renderer's digest covers: everything but server weights and admin states.
    fixed = (directory, timeout_client, port, maxconn)
    facts = HaproxyFacts(
        runtime_socket=f"{directory}/stats.sock",
        server_state_file=f"{directory}/server-state",
        maxconn=maxconn,
        servers=(
            ServerSetting(backend="be_p1", server="srv_m1", weight=weight, disabled=disabled),
            ServerSetting(backend="be_p1", server="srv_m2", weight=1, disabled=False),
        ),
        fixed_digest="test:" + hashlib.sha256(repr(fixed).encode()).hexdigest(),
    )
    return Config(text, facts)


def spec_fields(config: Config) -> dict[str, Any]:
    """The ``AmphoraSpec`` fields (or JSON body members) that carry ``config``."""
    return {
        "spec_format": SPEC_FORMAT,
        "haproxy_config": config.text,
        "haproxy_facts": config.facts.model_dump(),
    }
