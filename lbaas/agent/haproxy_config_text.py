"""What the agent reads out of a rendered HAProxy configuration text.

The agent is sent finished text, not a graph, yet it must know a few things about it: where
the runtime socket and the server-state file are and how many connections it asks for (the
rendered ``global`` section says), and whether a new text differs from the running one only in what the runtime API can change
without a reload. The second question is answered conservatively: the two texts must have
the same significant lines (comments and blank lines aside) in the same order, and every line
that differs must be a ``server`` line of the same backend and server whose words, once
``weight N`` and ``disabled``/``enabled`` are taken out, are equal. Anything else, however
small, is a reload. Words are split the way HAProxy splits them (quotes, backslash escapes,
``#`` comments), since paths are written quoted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_SECTIONS = frozenset(
    {
        "global",
        "defaults",
        "frontend",
        "backend",
        "listen",
        "peers",
        "resolvers",
        "userlist",
        "mailers",
        "program",
        "ring",
        "http-errors",
        "cache",
    }
)
_SERVER_SECTIONS = frozenset({"backend", "listen"})


# HAProxy needs two descriptors per connection plus some for listeners, logs and sockets.
FD_RESERVE = 100


def max_connections_for(fd_limit: int) -> int:
    """The largest global ``maxconn`` HAProxy can start with under ``fd_limit``."""
    return max((fd_limit - FD_RESERVE) // 2, 0)


@dataclass(frozen=True)
class ConfigFacts:
    """Files the running HAProxy uses, resolved against the amphora's directory."""

    runtime_socket: Path | None
    server_state_file: Path | None
    global_maxconn: int | None = None


@dataclass(frozen=True)
class ServerChange:
    """One runtime API change: a new weight and/or admin state for one server."""

    backend: str
    server: str
    weight: int | None = None
    disabled: bool | None = None


@dataclass(frozen=True)
class _Line:
    section: str
    section_name: str
    words: tuple[str, ...]


def split_words(line: str) -> list[str]:
    """One configuration line as HAProxy's words, without its comment."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    quote: str | None = None
    i = 0
    while i < len(line):
        char = line[i]
        if quote == "'":
            if char == "'":
                quote = None
            else:
                current.append(char)
        elif char == "\\" and i + 1 < len(line):
            nxt = line[i + 1]
            if nxt == "x" and i + 3 < len(line):
                current.append(chr(int(line[i + 2 : i + 4], 16)))
                i += 3
            else:
                current.append(nxt)
                i += 1
            in_word = True
        elif quote == '"':
            if char == '"':
                quote = None
            else:
                current.append(char)
        elif char in "\"'":
            quote = char
            in_word = True
        elif char == "#":
            break
        elif char.isspace():
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        else:
            current.append(char)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(current))
    return words


def _significant_lines(text: str) -> Iterator[_Line]:
    section, name = "", ""
    for raw in text.splitlines():
        words = tuple(split_words(raw))
        if not words:
            continue
        if words[0] in _SECTIONS:
            section, name = words[0], (words[1] if len(words) > 1 else "")
        yield _Line(section, name, words)


def read_config_facts(text: str, workdir: Path) -> ConfigFacts:
    """The admin runtime socket, server-state file and maxconn of the global section."""
    socket: Path | None = None
    state_file: str | None = None
    state_base: str | None = None
    maxconn: int | None = None
    for line in _significant_lines(text):
        if line.section != "global":
            continue
        words = line.words
        if words[:2] == ("stats", "socket") and len(words) > 2 and socket is None:
            address = words[2].removeprefix("unix@")
            if "@" not in address and _has_admin_level(words[3:]):
                socket = workdir / address
        elif words[0] == "server-state-file" and len(words) > 1:
            state_file = words[1]
        elif words[0] == "server-state-base" and len(words) > 1:
            state_base = words[1]
        elif words[0] == "maxconn" and len(words) > 1 and words[1].isdigit():
            maxconn = int(words[1])
    state_path: Path | None = None
    if state_file is not None:
        base = workdir / state_base if state_base is not None else workdir
        state_path = base / state_file
    return ConfigFacts(runtime_socket=socket, server_state_file=state_path, global_maxconn=maxconn)


def _has_admin_level(options: tuple[str, ...]) -> bool:
    return any(a == "level" and b == "admin" for a, b in zip(options, options[1:], strict=False))


def runtime_only_changes(old: str, new: str) -> list[ServerChange] | None:
    """The server changes that turn ``old`` into ``new``, or None if a reload is needed."""
    old_lines, new_lines = list(_significant_lines(old)), list(_significant_lines(new))
    if len(old_lines) != len(new_lines):
        return None
    changes: list[ServerChange] = []
    for before, after in zip(old_lines, new_lines, strict=True):
        if before == after:
            continue
        if not (_is_server(before) and _is_server(after)):
            return None
        if (before.section, before.section_name) != (after.section, after.section_name):
            return None
        weight_a, disabled_a, rest_a = _split_server(before.words)
        weight_b, disabled_b, rest_b = _split_server(after.words)
        if rest_a != rest_b:
            return None
        changes.append(
            ServerChange(
                backend=after.section_name,
                server=after.words[1],
                weight=weight_b if weight_b != weight_a else None,
                disabled=disabled_b if disabled_b != disabled_a else None,
            )
        )
    return changes


def _is_server(line: _Line) -> bool:
    return line.section in _SERVER_SECTIONS and line.words[0] == "server" and len(line.words) > 2


def _split_server(words: tuple[str, ...]) -> tuple[int, bool, tuple[str, ...]]:
    """(weight, disabled, the other words) of a server line; weight defaults to 1."""
    weight, disabled, rest = 1, False, []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "weight" and i + 1 < len(words) and words[i + 1].isdigit():
            weight = int(words[i + 1])
            i += 2
            continue
        if word in ("disabled", "enabled"):
            disabled = word == "disabled"
        else:
            rest.append(word)
        i += 1
    return weight, disabled, tuple(rest)
