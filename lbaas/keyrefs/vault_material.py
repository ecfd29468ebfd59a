"""References resolved in lbaas's own key manager (the vault), within the caller's project.

Only the last two path segments of a reference count, so it keeps working when the API is
reached under another host name; a reference to another project's secret does not resolve.
"""

from __future__ import annotations

from lbaas.db.secrets.secret_vault import SecretVault
from lbaas.errors import NotFound
from lbaas.keyrefs.base import KeyMaterial, Unresolvable, ref_of


class VaultMaterial(KeyMaterial):
    """``missing``: why a reference does not resolve when there is no vault."""

    def __init__(
        self, vault: SecretVault | None, missing: str = "the key manager is not enabled"
    ) -> None:
        self._vault = vault
        self._missing = missing

    def _opened(self) -> SecretVault:
        if self._vault is None:
            raise Unresolvable(self._missing)
        return self._vault

    def secret(self, project_id: str, ref: str) -> bytes:
        vault = self._opened()
        try:
            return vault.payload(project_id, ref_of(ref).id)[0]
        except NotFound as exc:
            raise Unresolvable(str(exc)) from exc

    def container(self, project_id: str, ref: str) -> dict[str, bytes]:
        vault = self._opened()
        try:
            view = vault.get_container(project_id, ref_of(ref).id)
            return {name: vault.payload(project_id, sid)[0] for name, sid in view.secrets}
        except NotFound as exc:
            raise Unresolvable(str(exc)) from exc
