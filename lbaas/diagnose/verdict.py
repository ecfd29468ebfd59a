"""A hop's verdict: its name, how well it is, and what was seen, in words."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Level(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True)
class Verdict:
    hop: str
    level: Level
    detail: str
