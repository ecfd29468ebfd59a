"""What the lab needs from its surroundings: a way to run a command, and its own error."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lbaas.host.base import CommandResult

# Runs argv to its end and returns its exit status and output; raises only when the command
# cannot be run at all. Tests pass their own (for instance one that "crashes" midway).
Runner = Callable[[Sequence[str]], CommandResult]


class LabError(Exception):
    """The lab cannot do what was asked (bad name, lab already up, a command failed)."""


class LabExists(LabError):
    """``up`` refused: a lab of that name is (partly) there; nothing was changed."""
