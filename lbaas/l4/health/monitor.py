"""What one health check probes, and one member's state under rise and fall.

A member starts healthy, as HAProxy's servers do, so a new listener carries traffic before
its first round of checks; ``fall`` failures in a row (Octavia's ``max_retries_down``) take
it out, ``rise`` successes in a row (``max_retries``) bring it back. A result that agrees
with the current state resets the streak, so isolated failures never add up.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProbeType(StrEnum):
    """The probes a node runs; the values are Octavia's monitor types."""

    TCP = "TCP"
    UDP_CONNECT = "UDP-CONNECT"
    HTTP = "HTTP"
    PING = "PING"


@dataclass(frozen=True)
class MonitorSpec:
    """One health monitor as the checker uses it (times in seconds)."""

    type: ProbeType
    delay: float
    timeout: float
    rise: int
    fall: int
    http_method: str = "GET"
    url_path: str = "/"
    expected_codes: str = "200"
    http_version: float = 1.0
    domain_name: str | None = None

    def __post_init__(self) -> None:
        if self.delay <= 0 or self.timeout <= 0 or self.rise < 1 or self.fall < 1:
            raise ValueError(f"a monitor needs delay, timeout > 0 and rise, fall >= 1: {self}")


@dataclass(frozen=True)
class Target:
    """One member to probe: its stable key, where it is and how to check it."""

    key: str
    address: str
    port: int
    monitor: MonitorSpec


@dataclass(frozen=True)
class HealthChange:
    """A member whose state changed (``at`` on the checker's clock)."""

    key: str
    healthy: bool
    at: float


@dataclass
class MemberState:
    """Healthy or not, and how many results in a row said otherwise."""

    healthy: bool = True
    streak: int = 0

    def record(self, ok: bool, monitor: MonitorSpec) -> bool:
        """Count one probe result; True when it changed the state."""
        if ok == self.healthy:
            self.streak = 0
            return False
        self.streak += 1
        if self.streak < (monitor.rise if ok else monitor.fall):
            return False
        self.healthy, self.streak = ok, 0
        return True


def expected_status(codes: str, status: int) -> bool:
    """Whether ``status`` is in Octavia's ``expected_codes`` (``200``, ``200,202``, ``200-204``)."""
    for part in codes.split(","):
        low, _, high = part.strip().partition("-")
        if low.isdigit() and int(low) <= status <= int(high or low):
            return True
    return False
