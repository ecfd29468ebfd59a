"""What the diagnosis asks outside the database, as interfaces: the agent that runs an
amphora, and whether a listener answers on the VIP. Real implementations are in
``agent_view.py`` and ``lbaas.health.probe``; tests pass their own through the
constructor of ``Diagnosis``."""

from __future__ import annotations

import abc

from lbaas.db.amphorae.amphora_repo import AmphoraFacts
from lbaas.model.fleet import HostAddress
from lbaas.model.graph import Listener
from lbaas.wire.amphora import AmphoraStatus
from lbaas.wire.amphora_diagnosis import AmphoraDiagnosis


class AgentView(abc.ABC):
    @abc.abstractmethod
    def where(self, amphora: AmphoraFacts) -> HostAddress:
        """Where the agent of ``amphora`` answers: its enrolled host, else the configured
        agent at the amphora's recorded address."""

    @abc.abstractmethod
    def amphora(self, where: HostAddress, amphora_id: str) -> AmphoraStatus | None:
        """The agent's status of the amphora, None if the agent does not know it; raises
        ``AgentUnreachable`` when the agent cannot be asked."""

    @abc.abstractmethod
    def diagnosis(self, where: HostAddress, amphora_id: str) -> AmphoraDiagnosis | None:
        """What the agent sees of the amphora now (VIP sockets, server checks); None if it
        cannot say (an agent older than the question); raises ``AgentUnreachable``."""


class VipProbe(abc.ABC):
    @abc.abstractmethod
    def answers(self, address: str, listener: Listener) -> bool:
        """Whether something serves ``listener`` on ``address``."""
