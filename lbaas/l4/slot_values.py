"""A listener's applied slot values, held as one small index per slot.

Why (issue 34): the engine remembers every listener's ``address . port`` per slot, to
rewrite only the slots that move. As a list that is 8 bytes a slot (a pointer to a
shared string): 8 KB per 1,021-slot listener, 80 MB at 10,000 load balancers, for a
handful of distinct members. Here each slot is one byte (two or four past 255 members)
indexing the distinct values.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence


class SlotValues:
    """The values of ``values``, in slot order; iterable and sized, nothing else."""

    __slots__ = ("_owners", "_targets")

    def __init__(self, values: Sequence[str]) -> None:
        targets = tuple(dict.fromkeys(values))
        index = {target: number for number, target in enumerate(targets)}
        code = "B" if len(targets) <= 0xFF else "H" if len(targets) <= 0xFFFF else "I"
        self._targets = targets
        self._owners = array(code, map(index.__getitem__, values))

    def __iter__(self) -> Iterator[str]:
        return map(self._targets.__getitem__, self._owners)

    def __len__(self) -> int:
        return len(self._owners)
