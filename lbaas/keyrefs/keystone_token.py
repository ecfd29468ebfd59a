"""A Keystone token of lbaas's service user, for requests to the operator's Barbican.

The token comes from a clouds.yaml entry through openstacksdk (the ``barbican`` extra), as
the Kubernetes controller reaches Octavia; keystoneauth renews it when it expires. The
tenant lets that user read its secrets with a Barbican ACL, as Octavia's users do for
Octavia's service user. No Keystone runs on the test machine, so this path is checked only
with keystoneauth's fixed-token plugin (docs/api-compat.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbaas.keyrefs.base import Unresolvable


class KeystoneToken:
    def __init__(self, cloud: str) -> None:
        self._cloud = cloud
        self._session: Any = None

    def __call__(self, project_id: str) -> Mapping[str, str]:
        """The token's headers (the same for every project: the ACL decides access)."""
        try:
            if self._session is None:
                import openstack  # the optional ``barbican`` extra

                self._session = openstack.connect(cloud=self._cloud).session
            headers = self._session.get_auth_headers()
        except Exception as exc:  # noqa: BLE001 - keystoneauth's errors share no base here
            raise Unresolvable(f"no Keystone token for Barbican ({type(exc).__name__})") from None
        return dict(headers or {})
