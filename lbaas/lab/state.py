"""The lab's state file: what it intends to build, what it built, what it started.

``up`` records each namespace here *before* creating it, so after a crash at any point the
file names everything that may exist and ``down`` removes exactly that. Processes the lab
starts (agents, amphorae) are registered per host with their start time, so a pid the
kernel has since given to another process is never killed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lbaas.private_files import make_private_directory, write_private


@dataclass
class RegisteredProcess:
    pid: int
    start_time: int  # field 22 of /proc/<pid>/stat: tells a reused pid apart
    role: str = ""  # which of its owner's processes: "agent", "api", "worker", "health"…


@dataclass
class LabState:
    name: str
    hosts: int
    members: int
    networks: dict[str, str] = field(default_factory=dict)  # "fab" -> "10.70.3.0/24"
    namespaces: list[str] = field(default_factory=list)
    complete: bool = False
    down_hosts: list[int] = field(default_factory=list)  # links down (lost or partitioned)
    processes: dict[str, list[RegisteredProcess]] = field(default_factory=dict)
    tenant_networks: dict[str, str] = field(default_factory=dict)  # "net1" -> "10.0.0.0/24"
    instances: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> record
    control: int = 1  # control hosts: ctl, ctl2… (several share the database host's PostgreSQL)
    down_controls: list[int] = field(default_factory=list)  # control hosts lost
    # The source tree a process runs ("h1", "ctl2/api"…; ``lbaas.lab.upgrade``): absent or
    # "", the lab's own code. A restart by ``lab`` starts it from the same tree.
    code: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> LabState:
        data = json.loads(text)
        processes = {
            owner: [RegisteredProcess(**entry) for entry in entries]
            for owner, entries in data.pop("processes", {}).items()
        }
        return cls(**data, processes=processes)


class StateFile:
    """``<state_dir>/labs/<name>.json``, replaced atomically on every change."""

    def __init__(self, state_dir: Path, name: str) -> None:
        self.path = state_dir / "labs" / f"{name}.json"
        self.services_dir = state_dir / "labs" / name

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> LabState | None:
        """The state, or None when there is none or it cannot be read (a torn write by
        hand, a file from another version): ``down`` then finds the lab by its names."""
        try:
            return LabState.from_json(self.path.read_text())
        except (OSError, ValueError, TypeError):
            return None

    def save(self, state: LabState) -> None:
        make_private_directory(self.path.parent)
        write_private(self.path, state.to_json())

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3 onwards of /proc/<pid>/stat, or None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses; fields resume after the last ")".
    return stat.rsplit(")", 1)[1].split()


def process_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def process_running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"
