"""CPU time of other processes, read from ``/proc/<pid>/stat`` (evidence, never asserted
on as a timing): utime + stime, in clock ticks."""

from __future__ import annotations

from pathlib import Path


def cpu_ticks(pids: list[int]) -> int:
    """utime + stime of ``pids`` (clock ticks), the ones that exited counted as 0."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total
