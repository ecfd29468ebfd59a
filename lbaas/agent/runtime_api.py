"""Clients for HAProxy's two control sockets: the runtime API and the master CLI.

The runtime API (the ``stats socket`` of the rendered configuration, served by the current
worker) reads statistics and changes servers without a reload: weights and ready / drain /
maint states. The master CLI (``-S master.sock``) tells which processes exist and how many
reloads the master has done, and triggers a reload. Both speak one line in, text out; the
socket I/O is a ``Transport`` callable so the parsing and command logic can be tested with a
fake transport instead of a live HAProxy (httpx's swappable-transport idea).

Every failure, whether the socket is missing or HAProxy answers a command with an error
message, is a ``RuntimeApiError``.
"""

from __future__ import annotations

import csv
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lbaas.errors import LbaasError

Transport = Callable[[str], str]
ServerAdminState = Literal["ready", "drain", "maint"]


class RuntimeApiError(LbaasError):
    """A control socket could not be used, or HAProxy refused a command."""


def unix_socket_transport(path: Path, timeout: float = 5.0) -> Transport:
    """A transport that sends one command per connection to the unix socket ``path``."""

    def send(command: str) -> str:
        chunks: list[bytes] = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(str(path))
                sock.sendall(command.encode() + b"\n")
                while chunk := sock.recv(65536):
                    chunks.append(chunk)
        except OSError as exc:
            raise RuntimeApiError(f"{path}: {command.split(';')[0]!r} failed: {exc}") from exc
        return b"".join(chunks).decode(errors="replace")

    return send


class RuntimeApi:
    """The runtime API of the current worker."""

    def __init__(self, transport: Transport) -> None:
        self._send = transport

    @classmethod
    def at(cls, path: Path) -> RuntimeApi:
        return cls(unix_socket_transport(path))

    def show_info(self) -> dict[str, str]:
        """``show info`` as a mapping (``Pid``, ``Uptime_sec``, ``CurrConns``...)."""
        info: dict[str, str] = {}
        for line in self._send("show info").splitlines():
            key, sep, value = line.partition(":")
            if sep:
                info[key.strip()] = value.strip()
        if "Pid" not in info:
            raise RuntimeApiError("show info returned no Pid")
        return info

    def show_stat(self) -> list[dict[str, str]]:
        """``show stat`` rows keyed by the CSV header (``pxname``, ``svname``, ``status``...)."""
        text = self._send("show stat")
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines or not lines[0].startswith("# "):
            raise RuntimeApiError(f"unexpected show stat answer: {text[:200]!r}")
        header = lines[0][2:].rstrip(",").split(",")
        rows: list[dict[str, str]] = []
        for values in csv.reader(lines[1:]):
            rows.append(dict(zip(header, values, strict=False)))
        return rows

    def show_servers_state(self) -> str:
        """``show servers state`` verbatim: the format ``server-state-file`` loads."""
        text = self._send("show servers state")
        if not text.startswith("1\n"):
            raise RuntimeApiError(f"unexpected show servers state answer: {text[:200]!r}")
        return text

    def set_server_weight(self, backend: str, server: str, weight: int) -> None:
        self._command(f"set server {backend}/{server} weight {int(weight)}")

    def set_server_state(self, backend: str, server: str, state: ServerAdminState) -> None:
        self._command(f"set server {backend}/{server} state {state}")

    def _command(self, command: str) -> None:
        answer = self._send(command).strip()
        if answer:
            raise RuntimeApiError(f"{command!r} refused: {answer}")


@dataclass(frozen=True)
class ProcEntry:
    pid: int
    kind: str
    reloads: int


@dataclass(frozen=True)
class ProcTable:
    """``show proc`` of the master: itself, its reload counts and its workers."""

    master: ProcEntry
    failed_reloads: int
    workers: tuple[ProcEntry, ...]

    @property
    def current_workers(self) -> tuple[ProcEntry, ...]:
        """Workers started by the latest (re)load; older ones are still draining."""
        return tuple(w for w in self.workers if w.reloads == 0)


class MasterCli:
    """The master CLI of one HAProxy master-worker instance."""

    def __init__(self, transport: Transport) -> None:
        self._send = transport

    @classmethod
    def at(cls, path: Path, timeout: float = 5.0) -> MasterCli:
        return cls(unix_socket_transport(path, timeout))

    def show_proc(self) -> ProcTable:
        # The master CLI keeps a connection open after a command unless told to quit.
        text = self._send("show proc; quit")
        master: ProcEntry | None = None
        failed = 0
        workers: list[ProcEntry] = []
        for line in text.splitlines():
            words = line.split()
            if len(words) < 3 or line.startswith("#") or not words[0].isdigit():
                continue
            entry = ProcEntry(int(words[0]), words[1], _leading_int(words[2]))
            if entry.kind == "master":
                master = entry
                if "[failed:" in line:
                    failed = _leading_int(line.split("[failed:", 1)[1].strip())
            elif entry.kind == "worker":
                workers.append(entry)
        if master is None:
            raise RuntimeApiError(f"unexpected show proc answer: {text[:200]!r}")
        return ProcTable(master, failed, tuple(workers))

    def reload(self) -> None:
        """Ask the master to re-execute itself on its configuration (it closes the socket)."""
        self._send("reload")


def _leading_int(text: str) -> int:
    digits = ""
    for char in text:
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else 0
