"""Which nodes carry the distributed load balancers: the interface and its first source.

Every node in the directory gets every distributed load balancer, so a client's flow is
balanced on whichever node it starts from. ``SettingsNodeDirectory`` (``nodes``) reads the
list from settings; ``RegistryNodeDirectory`` (``registry``) adds the UP hosts of the
fleet's hosts registry (the enrolled agents), so every live host carries them.
"""

from __future__ import annotations

import abc
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    """One node whose agent programs its kernel: a name for logs and its agent's URL.

    ``host_id``: the fleet host it is (its agent's certificate must name it), or None for
    a node listed by URL in settings.
    """

    name: str
    agent_url: str
    host_id: str | None = None


class NodeDirectory(abc.ABC):
    @abc.abstractmethod
    def nodes(self) -> list[Node]:
        """The nodes that must carry every distributed load balancer now (may be empty)."""


@dataclass(frozen=True)
class Binding:
    """A port bound to a host that holds an address: where an instance with it runs."""

    subnet_id: str
    host_id: str


class HostBindings(abc.ABC):
    """Which hosts the members' addresses are on (``locality``)."""

    @abc.abstractmethod
    def bindings(self, addresses: Collection[str]) -> dict[str, list[Binding]]:
        """Per address (only those some bound port holds), every binding that holds it."""
