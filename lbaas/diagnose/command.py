"""``lbaas diagnose <load balancer id or name>``: print a verdict per hop; exit 0 when
every hop is well, 1 when one fails, 2 when the word names no load balancer or several
(a name shared by load balancers: their ids are listed, to pick one). It reads the
database directly, as the rest of the command does, not the API."""

from __future__ import annotations

import datetime as dt
import sys

from lbaas.certs.kek import load_key_ring
from lbaas.config import Settings
from lbaas.db.engine import Database
from lbaas.db.secrets.secret_vault import SecretVault
from lbaas.diagnose.agent_view import TlsAgentView
from lbaas.diagnose.base import VipProbe
from lbaas.diagnose.diagnosis import Diagnosis, first_failure, render
from lbaas.diagnose.link_certificates import link_expiries
from lbaas.health.certificates import render_expiries
from lbaas.health.probe import ListenerProbe
from lbaas.keyrefs.base import KeyMaterial
from lbaas.keyrefs.configured import barbican_material, routed
from lbaas.keyrefs.vault_material import VaultMaterial
from lbaas.model.graph import Listener


class ListenerVipProbe(VipProbe):
    """The health manager's own probe (``HEAD /`` or a bare TCP exchange)."""

    def __init__(self, timeout: float) -> None:
        self._probe = ListenerProbe(timeout=timeout)

    def answers(self, address: str, listener: Listener) -> bool:
        return self._probe.answers(address, listener)


def key_material(settings: Settings, database: Database) -> KeyMaterial:
    """What the worker reads references with; without the key file here, lbaas's own
    references say so (the diagnosis runs wherever the operator is)."""
    path = settings.kek_path
    ring = load_key_ring(path) if settings.keymanager.enabled else None
    vault = SecretVault(database, ring, path) if ring is not None else None
    missing = f"no key-encryption key file readable at {path}"
    if not settings.keymanager.enabled:
        missing = "the key manager is not enabled"
    local = VaultMaterial(vault, missing)
    return routed(local, barbican_material(settings.keymanager))


def build_diagnosis(settings: Settings, database: Database) -> Diagnosis:
    timeout = settings.health.probe_timeout or 1.0
    return Diagnosis(
        database,
        TlsAgentView(settings),
        ListenerVipProbe(timeout),
        key_material(settings, database),
        stale_after=settings.health.stale_after,
    )


def run(settings: Settings, database: Database, word: str) -> int:
    diagnosis = build_diagnosis(settings, database)
    ids = diagnosis.resolve(word)
    if len(ids) > 1:
        sys.stderr.write(f"{len(ids)} load balancers are named {word!r}: {', '.join(ids)}\n")
        return 2
    verdicts = diagnosis.run(ids[0]) if ids else None
    if verdicts is None:
        sys.stderr.write(f"no load balancer with the id or name {word!r}\n")
        return 2
    loadbalancer_id = ids[0]
    sys.stdout.write(render(loadbalancer_id, verdicts) + "\n")
    expiries = link_expiries(settings, database, loadbalancer_id)
    sys.stdout.write(render_expiries(expiries, dt.datetime.now(dt.UTC)) + "\n")
    return 0 if first_failure(verdicts) is None else 1
