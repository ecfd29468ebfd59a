"""The agent, asked over its mutual-TLS API as the amphora provider asks it, with the
controller's identity from ``<state_dir>/pki``: an enrolled host's agent at the address
the hosts table records, checked to be that host (its certificate's name); an amphora
with no host at the configured agent."""

from __future__ import annotations

from pathlib import Path

from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.config import Settings
from lbaas.db.amphorae.amphora_repo import AmphoraFacts
from lbaas.diagnose.base import AgentView
from lbaas.fleet.client import AgentClient
from lbaas.model.fleet import HostAddress, agent_server_name
from lbaas.wire.amphora import AmphoraStatus
from lbaas.wire.amphora_diagnosis import AmphoraDiagnosis


class TlsAgentView(AgentView):
    def __init__(self, settings: Settings, timeout: float = 5.0) -> None:
        self._settings = settings
        self._timeout = timeout
        self._tls: TlsFiles | None = None

    def where(self, amphora: AmphoraFacts) -> HostAddress:
        if amphora.agent is not None:
            return amphora.agent
        agent = self._settings.agent
        address = amphora.host or agent.host
        if address in ("0.0.0.0", ""):
            address = "127.0.0.1"
        elif address == "::":
            address = "::1"
        return HostAddress(agent.host_id, address, agent.port)

    def amphora(self, where: HostAddress, amphora_id: str) -> AmphoraStatus | None:
        with self._client(where) as client:
            return client.get_amphora(amphora_id)

    def diagnosis(self, where: HostAddress, amphora_id: str) -> AmphoraDiagnosis | None:
        with self._client(where) as client:
            return client.diagnose_amphora(amphora_id)

    def _client(self, where: HostAddress) -> AgentClient:
        if self._tls is None:
            pki = Path(self._settings.state_dir).absolute() / "pki"
            self._tls = CertificateAuthority.load_or_create(pki).ensure_identity(
                pki / "controller", "controller", "client"
            )
        enrolled = where.host_id != self._settings.agent.host_id
        server_name = agent_server_name(where.host_id) if enrolled else None
        return AgentClient(
            where.base_url, tls=self._tls, timeout=self._timeout, server_name=server_name
        )
