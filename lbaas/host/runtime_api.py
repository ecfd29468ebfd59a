"""Clients for HAProxy's two control sockets: the runtime API and the master CLI.

The runtime API (the ``stats socket`` of the rendered configuration, served by the current
worker) reads statistics and changes servers without a reload: weights and ready / drain /
maint states. The master CLI (``-S master.sock``) tells which processes exist and how many
reloads the master has done, triggers a reload, and passes a command on to any worker,
old ones still draining included (``@!<pid>``). Both speak one line in, text out; the
socket I/O is a ``Transport`` callable so the parsing and command logic can be tested with a
fake transport instead of a live HAProxy (httpx's swappable-transport idea).

Usually a transport opens one connection per command. ``CliSession`` keeps one interactive
connection to the runtime API instead: a worker told to stop by a reload still serves the
connections it has, this one included, and does not exit before it is closed. That is what
lets ``lbaas.amphora.stats`` read a replaced worker's final counters (HAProxy 2.6 closes an
idle session after ``set timeout cli``, which bounds the hold even if the agent forgets it).

Every failure, whether the socket is missing or HAProxy answers a command with an error
message, is a ``RuntimeApiError``.
"""

from __future__ import annotations

import csv
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

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


class Session(Protocol):
    """A transport over one connection that stays open until ``close``."""

    def __call__(self, command: str) -> str: ...

    def close(self) -> None: ...


_PROMPT = b"\n> "


class CliSession:
    """One interactive (``prompt`` mode) connection to a runtime API socket."""

    def __init__(self, sock: socket.socket, path: Path) -> None:
        self._sock = sock
        self._path = path

    @classmethod
    def open(cls, path: Path, timeout: float = 5.0, idle_limit: int = 30) -> CliSession:
        """Connect to ``path``; HAProxy drops the session after ``idle_limit`` idle seconds."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        session = cls(sock, path)
        try:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(b"prompt\n")
            session._read()
            session._command_ok(f"set timeout cli {int(idle_limit)}")
        except (OSError, RuntimeApiError) as exc:
            sock.close()
            raise RuntimeApiError(f"{path}: cannot open a CLI session: {exc}") from exc
        return session

    def __call__(self, command: str) -> str:
        try:
            self._sock.sendall(command.encode() + b"\n")
            return self._read()
        except OSError as exc:
            raise RuntimeApiError(f"{self._path}: {command!r} failed: {exc}") from exc

    def close(self) -> None:
        self._sock.close()

    def _read(self) -> str:
        chunks = bytearray()  # a ring dump is megabytes: no copy per chunk
        while not chunks.endswith(_PROMPT):
            chunk = self._sock.recv(65536)
            if not chunk:
                raise RuntimeApiError(f"{self._path}: the session was closed")
            chunks += chunk
        return chunks[:-2].decode(errors="replace")  # the answer, without the "> " prompt

    def _command_ok(self, command: str) -> None:
        answer = self(command).strip()
        if answer:
            raise RuntimeApiError(f"{command!r} refused: {answer}")


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
        return parse_show_stat(self._send("show stat"))

    def show_events(self, ring: str) -> str:
        """``show events <ring>``: every line the ring still holds, oldest first."""
        return self._send(f"show events {ring}")

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
            if len(words) < 3 or line.startswith("#") or not _is_number(words[0]):
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

    def worker_stat(self, pid: int) -> list[dict[str, str]]:
        """``show stat`` of worker ``pid``, current or old, passed on by the master."""
        return parse_show_stat(self._send(f"@!{int(pid)} show stat; quit"))

    def worker_environment(self, pid: int, name: str) -> str | None:
        """Environment variable ``name`` of worker ``pid`` (``show env``); None if unset."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"not an environment variable name: {name!r}")
        text = self._send(f"@!{int(pid)} show env {name}; quit")
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key == name:
                return value
        if "Variable not found" in text or not text.strip():
            return None
        raise RuntimeApiError(f"unexpected show env answer: {text[:200]!r}")

    def reload(self) -> None:
        """Ask the master to re-execute itself on its configuration (it closes the socket)."""
        self._send("reload")


def parse_show_stat(text: str) -> list[dict[str, str]]:
    """``show stat`` rows keyed by the CSV header; anything else is a ``RuntimeApiError``."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# "):
        raise RuntimeApiError(f"unexpected show stat answer: {text[:200]!r}")
    header = lines[0][2:].rstrip(",").split(",")
    try:
        return [dict(zip(header, values, strict=False)) for values in csv.reader(lines[1:])]
    except csv.Error as exc:
        raise RuntimeApiError(f"unreadable show stat answer: {exc}") from exc


def _is_number(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also takes "²", which ``int`` refuses."""
    return text.isascii() and text.isdigit()


def _leading_int(text: str) -> int:
    digits = ""
    for char in text:
        if not _is_number(char):
            break
        digits += char
    return int(digits) if digits else 0
