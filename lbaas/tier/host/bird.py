"""Talking to a running BIRD 2 through its control socket with ``birdc``, and ``bird -p``.

The control socket is a Unix socket in the file system, so ``birdc`` reaches a BIRD inside
any network namespace without entering it. ``birdc`` runs in the socket's directory and is
given the socket's bare name: a Unix socket path is limited to 107 bytes, which a test's
temporary directory can exceed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from lbaas.errors import InvalidRenderedConfig, TemporaryError

_TIMEOUT = 30.0


class BirdCommandFailed(TemporaryError):
    """``birdc`` could not reach BIRD or BIRD refused the command."""

    def __init__(self, argv: Sequence[str], detail: str) -> None:
        super().__init__(
            "The BGP daemon could not be reached.",
            operator_message=f"{' '.join(argv)}: {detail.strip()}",
        )


def parse_check(config: Path, *, bird_binary: str = "bird") -> None:
    """``bird -p -c``: BIRD parses ``config`` and exits; InvalidRenderedConfig if refused."""
    done = _run([bird_binary, "-p", "-c", str(config)], cwd=None)
    if done.returncode != 0:
        raise InvalidRenderedConfig(
            "BIRD refused the rendered configuration.", f"bird -p: {done.stderr.strip()}"
        )


class BirdControl:
    """One BIRD's control socket."""

    def __init__(self, socket: Path, *, birdc_binary: str = "birdc") -> None:
        self._socket = socket
        self._birdc = birdc_binary

    def command(self, *words: str) -> str:
        argv = [self._birdc, "-s", self._socket.name, *words]
        done = _run(argv, cwd=self._socket.parent)
        # birdc exits 0 even for some refusals; replies starting with an error code (8xxx,
        # 9xxx) or "Unable to connect" are failures.
        failed = done.returncode != 0 or any(
            line[:1] in ("8", "9") and line[1:4].isdigit() for line in done.stdout.splitlines()
        )
        if failed or "Unable to connect" in done.stdout + done.stderr:
            raise BirdCommandFailed(argv, done.stdout + done.stderr)
        return done.stdout

    def configure(self) -> None:
        """Re-read the configuration file (after it was rewritten): announce or withdraw."""
        reply = self.command("configure")
        if "Reconfigured" not in reply and "Reconfiguration in progress" not in reply:
            raise BirdCommandFailed([self._birdc, "configure"], reply)

    def established(self) -> set[str]:
        """The names of the BGP protocols whose session is Established."""
        up = set()
        for line in self.command("show", "protocols").splitlines():
            words = line.split()
            if len(words) >= 6 and words[1] == "BGP" and words[-1] == "Established":
                up.add(words[0])
        return up

    def bgp_sessions(self) -> dict[str, str]:
        """Every BGP protocol's state and info (``up Established``, ``start Active``...)."""
        sessions = {}
        for line in self.command("show", "protocols").splitlines():
            words = line.split()
            if len(words) >= 5 and words[1] == "BGP":
                sessions[words[0]] = " ".join([words[3], *words[5:]])
        return sessions

    def prefixes(self, protocol: str) -> list[str]:
        """The prefixes of ``protocol``'s routes (``show route protocol NAME``)."""
        found = []
        for line in self.command("show", "route", "protocol", protocol).splitlines():
            first = line.split()[0] if line.split() else ""
            if "/" in first and first[0].isdigit():
                found.append(first)
        return sorted(found)

    def routes(self) -> str:
        """``show route all``: the text of BIRD's routing table, for people and logs."""
        return self.command("show", "route", "all")


def _run(argv: Sequence[str], cwd: Path | None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False, cwd=cwd
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BirdCommandFailed(argv, str(exc)) from exc
