"""Progress of lbaas's long commands (``lab up``, ``db upgrade``, the benchmarks), on stderr.

On a terminal: one line rewritten in place (``title [3/7] what… 4.2 s``), throttled so a
tight loop does not spend its time drawing, and ended with a newline. Not on a terminal
(a log, CI, a pipe): plain lines, one per named step, or about one per tenth of a counted
loop, so a log stays short. Quiet: nothing. Always stderr: a command's own output on
stdout (the lab's JSON, a benchmark's figures) stays machine-readable. No dependency: the
runtime does not ship ``rich`` or ``tqdm``.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: Seconds between two redraws of the terminal line.
REDRAW_SECONDS = 0.1


class Progress:
    """Steps (or a count up to ``total``) of one long piece of work named ``title``."""

    def __init__(
        self,
        title: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        quiet: bool = False,
    ) -> None:
        self.title, self.total, self.done_count = title, total, 0
        self._stream = sys.stderr if stream is None else stream
        self._quiet = quiet
        self._tty = self._stream.isatty()
        self._started = time.monotonic()
        self._drawn_at = 0.0
        self._next_tenth = 1

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self._started:.1f} s"

    def _count(self) -> str:
        return f"[{self.done_count}/{self.total}]" if self.total else f"[{self.done_count}]"

    def step(self, what: str) -> None:
        """A named step starts (``what``): shown at once, on a terminal and in a log."""
        if self._quiet:
            return
        line = f"{self.title} {self._count()} {what}… {self._elapsed()}"
        self._write(line, force=True)
        self.done_count += 1

    def advance(self, count: int = 1) -> None:
        """``count`` more items of a counted loop are done."""
        self.done_count += count
        if self._quiet:
            return
        line = f"{self.title} {self._count()} {self._elapsed()}"
        if self._tty:
            self._write(line, force=False)
        elif self.total and self.done_count * 10 >= self._next_tenth * self.total:
            self._next_tenth = self.done_count * 10 // self.total + 1
            self._write(line, force=True)

    def finish(self, what: str = "done") -> None:
        if self._quiet:
            return
        line = f"{self.title} {what} in {self._elapsed()}"
        self._stream.write(f"\r\x1b[K{line}\n" if self._tty else f"{line}\n")
        self._stream.flush()

    def _write(self, line: str, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        self._stream.write(f"\r\x1b[K{line}" if self._tty else f"{line}\n")
        self._stream.flush()
