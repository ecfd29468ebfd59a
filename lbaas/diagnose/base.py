"""What the diagnosis asks outside the database, as interfaces: the agent that runs an
amphora, and whether a listener answers on the VIP. Real implementations are in
``agent_view.py`` and ``lbaas.health.probe``; tests pass their own through the
constructor of ``Diagnosis``."""

from __future__ import annotations

import abc

from lbaas.model.graph import Listener
from lbaas.wire.amphora import AmphoraStatus


class AgentView(abc.ABC):
    @abc.abstractmethod
    def amphora(self, host: str | None, amphora_id: str) -> AmphoraStatus | None:
        """The agent's status of the amphora, None if the agent does not know it; raises
        ``AgentUnreachable`` when the agent cannot be asked."""


class VipProbe(abc.ABC):
    @abc.abstractmethod
    def answers(self, address: str, listener: Listener) -> bool:
        """Whether something serves ``listener`` on ``address``."""
