"""lbaas's own credentials at Keystone, as ``[keystone_authtoken]`` names them.

The API validates callers' tokens as this service user (``lbaas.identity``); an agent's
metadata proxies read their host's ports from the API with a token of it
(``lbaas.metadata``). Both build the same keystoneauth1 plugin here: an application
credential when one is set, a password otherwise. keystoneauth1's ``Session`` keeps the
token and fetches a new one before it expires.
"""

from __future__ import annotations

from keystoneauth1 import session
from keystoneauth1.identity import v3

from lbaas.config import KeystoneAuthtokenSettings


def configured(settings: KeystoneAuthtokenSettings) -> bool:
    """Whether the section names a Keystone and a credential to present there."""
    return bool(settings.auth_url and (settings.application_credential_id or settings.username))


def service_auth(settings: KeystoneAuthtokenSettings) -> v3.Auth:
    if settings.application_credential_id:
        secret = settings.application_credential_secret
        return v3.ApplicationCredential(
            auth_url=settings.auth_url,
            application_credential_id=settings.application_credential_id,
            application_credential_secret=secret.get_secret_value() if secret else "",
        )
    password = settings.password
    return v3.Password(
        auth_url=settings.auth_url,
        username=settings.username,
        password=password.get_secret_value() if password else "",
        user_domain_name=settings.user_domain_name,
        project_name=settings.project_name,
        project_domain_name=settings.project_domain_name,
    )


def service_session(settings: KeystoneAuthtokenSettings) -> session.Session:
    return session.Session(auth=service_auth(settings), timeout=settings.timeout)
