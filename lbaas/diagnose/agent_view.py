"""The agent, asked over its mutual-TLS API as the amphora provider asks it, with the
controller's identity from ``<state_dir>/pki``."""

from __future__ import annotations

from pathlib import Path

from lbaas.certs.authority import CertificateAuthority
from lbaas.config import Settings
from lbaas.diagnose.base import AgentView
from lbaas.fleet.client import AgentClient
from lbaas.wire.amphora import AmphoraStatus


class TlsAgentView(AgentView):
    def __init__(self, settings: Settings, timeout: float = 5.0) -> None:
        self._settings = settings
        self._timeout = timeout

    def amphora(self, host: str | None, amphora_id: str) -> AmphoraStatus | None:
        settings = self._settings
        pki = Path(settings.state_dir).absolute() / "pki"
        tls = CertificateAuthority.load_or_create(pki).ensure_identity(
            pki / "controller", "controller", "client"
        )
        where = host or settings.agent.host
        url_host = f"[{where}]" if ":" in where else where
        url = f"https://{url_host}:{settings.agent.port}"
        with AgentClient(url, tls=tls, timeout=self._timeout) as client:
            return client.get_amphora(amphora_id)
