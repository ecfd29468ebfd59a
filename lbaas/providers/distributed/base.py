"""Which nodes carry the distributed load balancers: the interface and its first source.

Every node in the directory gets every distributed load balancer, so a client's flow is
balanced on whichever node it starts from. ``SettingsNodeDirectory`` (``nodes``) reads the
list from settings; the hosts registry (issue 11) can implement ``NodeDirectory`` from its
table of live hosts without the provider changing.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    """One node whose agent programs its kernel: a name for logs and its agent's URL."""

    name: str
    agent_url: str


class NodeDirectory(abc.ABC):
    @abc.abstractmethod
    def nodes(self) -> list[Node]:
        """The nodes that must carry every distributed load balancer now (may be empty)."""
