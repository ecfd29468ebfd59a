"""Running a host command and reading what it printed, whatever bytes those are.

Tools print what they were given: ``haproxy -c`` quotes the offending configuration line,
cut at a byte boundary that may split a UTF-8 character (a full-width digit in
``expected_codes`` did), and ``ip`` prints interface names the kernel takes as raw bytes.
Decoding that output strictly raised ``UnicodeDecodeError`` out of the agent instead of
the validation error the controller must see, so every command's output is read as bytes
and decoded here, once, with undecodable bytes replaced.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from lbaas.host.base import CommandResult, HostCommandFailed


def decode_output(data: bytes) -> str:
    """Text for a tool's output: UTF-8, with undecodable bytes replaced (never raises)."""
    return data.decode("utf-8", errors="replace")


def run_command(
    argv: Sequence[str], *, cwd: Path | None = None, timeout: float = 30.0
) -> CommandResult:
    """Run ``argv`` to its end; a non-zero exit is returned, not raised.

    Raises HostCommandFailed only when the command cannot be run or overruns ``timeout``.
    """
    try:
        done = subprocess.run(
            list(argv), cwd=cwd, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostCommandFailed(argv, -1, str(exc)) from exc
    return CommandResult(done.returncode, decode_output(done.stdout), decode_output(done.stderr))
