"""What the API handlers are built with, assembled once by the composition root."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from lbaas.config import Settings
from lbaas.db.engine import Database
from lbaas.db.secrets.secret_vault import SecretVault
from lbaas.identity.enforcer import PolicyEnforcer
from lbaas.keyrefs.base import KeyMaterial
from lbaas.keyrefs.configured import barbican_material, routed
from lbaas.keyrefs.vault_material import VaultMaterial
from lbaas.metrics.process import ProcessMetrics
from lbaas.providers.registry import ProviderRegistry


@dataclass
class ApiServices:
    settings: Settings
    database: Database
    providers: ProviderRegistry
    #: Called after a write committed a converge job (wakes an in-process worker).
    notify: Callable[[], None] = field(default=lambda: None)
    #: This process's instruments; /metrics shows them (with the health manager's, when
    #: it runs in this process) beside what the database holds.
    metrics: ProcessMetrics = field(default_factory=ProcessMetrics)
    #: The key manager's storage (None: no key manager; certificate references fail).
    vault: SecretVault | None = None

    @cached_property
    def key_material(self) -> KeyMaterial:
        """Where certificate references are read: the vault, and the operator's Barbican."""
        return routed(VaultMaterial(self.vault), barbican_material(self.settings.keymanager))

    @cached_property
    def policy(self) -> PolicyEnforcer:
        """Octavia's rules and the operator's policy file (read once at app creation)."""
        api = self.settings.api
        return PolicyEnforcer(
            enforce_new_defaults=api.enforce_new_defaults, policy_file=api.policy_file
        )
