"""The key material a process reads references with, as the settings say.

Always lbaas's own key manager (its vault, possibly not enabled); with ``[keymanager]
barbican_endpoints`` also the operator's Barbican, for the references under them.
"""

from __future__ import annotations

import httpx

from lbaas.config import KeyManagerSettings
from lbaas.keyrefs.barbican_material import AuthHeaders, BarbicanMaterial, RoutedMaterial
from lbaas.keyrefs.base import KeyMaterial
from lbaas.keyrefs.keystone_token import KeystoneToken


def _project_header(project_id: str) -> dict[str, str]:
    return {"X-Project-Id": project_id}


def barbican_material(settings: KeyManagerSettings) -> BarbicanMaterial | None:
    """A reader for the operator's Barbican, or None when none is configured."""
    if not settings.barbican_endpoints:
        return None
    auth: AuthHeaders = _project_header
    if settings.barbican_auth == "keystone":
        auth = KeystoneToken(str(settings.barbican_cloud))
    verify: str | bool = str(settings.barbican_ca_file) if settings.barbican_ca_file else True
    client = httpx.Client(timeout=settings.barbican_timeout, verify=verify)
    return BarbicanMaterial(settings.barbican_endpoints, auth, client)


def routed(local: KeyMaterial, barbican: BarbicanMaterial | None) -> KeyMaterial:
    return local if barbican is None else RoutedMaterial(local, barbican)
