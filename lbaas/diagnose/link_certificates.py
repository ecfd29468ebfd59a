"""The end of every certificate the controller-agent link of one load balancer rests on:
the CA's, the controller's client certificate and the agent certificate of each host its
amphorae run on (asked over the agent's API, as the renewal round does). Printed by
``lbaas diagnose`` after the hops: an expired one would fail the agent hop, but one that
ends in a week fails nothing yet."""

from __future__ import annotations

from pathlib import Path

from lbaas.certs.authority import CertificateAuthority
from lbaas.config import Settings
from lbaas.db.amphorae.amphora_repo import amphora_facts
from lbaas.db.engine import Database
from lbaas.fleet.client_pool import tls_client_factory
from lbaas.health.certificates import CONTROLLER, CertificateExpiry, FleetCertificates, FleetHost


def link_expiries(
    settings: Settings, database: Database, loadbalancer_id: str
) -> list[CertificateExpiry]:
    with database.read_connection() as conn:
        amphorae = amphora_facts(conn, loadbalancer_id)
    hosts = {a.agent.host_id: a.agent for a in amphorae if a.agent is not None}
    pki = Path(settings.state_dir).absolute() / "pki"
    tls = CertificateAuthority.load_or_create(pki).ensure_identity(
        pki / CONTROLLER, CONTROLLER, "client"
    )
    clients = tls_client_factory(tls, timeout=5, handshake_timeout=None)
    listed = [FleetHost(hosts[h], up=True) for h in sorted(hosts)]
    return FleetCertificates(pki, lambda: listed, clients).expiries()
