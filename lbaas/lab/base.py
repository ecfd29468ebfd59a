"""What the lab needs from its surroundings: a way to run a command, its hosts' mount
namespaces, and its own error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lbaas.host.base import CommandResult

# Runs argv to its end and returns its exit status and output; raises only when the command
# cannot be run at all. Tests pass their own (for instance one that "crashes" midway).
Runner = Callable[[Sequence[str]], CommandResult]


class LabError(Exception):
    """The lab cannot do what was asked (bad name, lab already up, a command failed)."""


class LabExists(LabError):
    """``up`` refused: a lab of that name is (partly) there; nothing was changed."""


@dataclass(frozen=True)
class HostFiles:
    """What one lab host sees of the machine's files besides the system's own."""

    own: tuple[Path, ...]  # bound back at their paths (made 0700 when missing)
    hidden: tuple[Path, ...]  # covered by an empty tmpfs (``/tmp`` always is)
    #: Own too, but crossed by other users' processes (HAProxy's workers): made 0755 when
    #: missing, with every parent made for them.
    crossed: tuple[Path, ...] = ()
    #: The machine's software below ``/tmp`` (a checkout, its virtualenv), which the
    #: host's own ``/tmp`` would hide: bound back read-only, the same for every host.
    software: tuple[Path, ...] = ()

    @property
    def bound(self) -> tuple[Path, ...]:
        # The software first: an own directory inside it is then mounted on top of it.
        return (*self.software, *self.own, *self.crossed)


class MountNamespaces(Protocol):
    """The lab hosts' mount namespaces (``lbaas.lab.mounts.HostMounts``)."""

    def create(self, namespace: str, files: HostFiles) -> None:
        """Give host ``namespace`` a mount namespace showing ``files`` (replacing one)."""

    def remove(self, namespace: str) -> None:
        """Drop host ``namespace``'s mount namespace; nothing when it has none."""

    def names(self) -> list[str]:
        """The namespaces that have one now."""
