"""Asking Keystone who a token belongs to: ``GET /v3/auth/tokens`` with X-Subject-Token.

This is the call keystonemiddleware's ``auth_token`` makes, made with keystoneauth1 (the
ecosystem's HTTP and authentication library): a session authenticated as lbaas's service
user (password or application credential) sends the caller's token as X-Subject-Token,
and keystoneauth1 reads Keystone's token body into an ``AccessInfo``. Keystone answers
404 for a token that is invalid, expired or revoked. Any other failure (Keystone
unreachable, lbaas's own credentials refused) is "cannot tell", which the middleware
turns into 503, never into an accepted caller. Secrets and tokens are never logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from keystoneauth1 import access, session
from keystoneauth1 import exceptions as ksa

from lbaas.config import KeystoneAuthtokenSettings
from lbaas.service_auth import service_session

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenIdentity:
    """What a valid token says about its bearer."""

    user_id: str | None
    user_name: str | None
    project_id: str | None
    project_name: str | None
    roles: tuple[str, ...]
    system_scope: str | None
    expires: datetime | None


class TokenRefused(Exception):
    """Keystone says the token is not valid (invalid, expired or revoked)."""


class KeystoneUnavailable(Exception):
    """Keystone could not be asked, or refused lbaas's own credentials."""


def tokens_url(auth_url: str) -> str:
    base = auth_url.rstrip("/")
    return f"{base}/auth/tokens" if base.endswith("/v3") else f"{base}/v3/auth/tokens"


def _identity(body: object, token: str) -> TokenIdentity:
    if not isinstance(body, dict):
        raise KeystoneUnavailable("Keystone's token body is not an object")
    info = access.create(body=body, auth_token=token)
    if not isinstance(info, access.AccessInfoV3):
        raise KeystoneUnavailable("Keystone's token body is not a v3 token")
    return TokenIdentity(
        user_id=info.user_id,
        user_name=info.username,
        project_id=info.project_id,
        project_name=info.project_name,
        roles=tuple(info.role_names or ()),
        system_scope="all" if info.system_scoped else None,
        expires=info.expires,
    )


class KeystoneTokens:
    """Validates tokens as lbaas's service user (one keystoneauth1 session, reused)."""

    def __init__(
        self, settings: KeystoneAuthtokenSettings, http: session.Session | None = None
    ) -> None:
        self._url = tokens_url(settings.auth_url)
        self._session = http or service_session(settings)

    def validate(self, token: str) -> TokenIdentity:
        """Who the token is; TokenRefused or KeystoneUnavailable otherwise (blocking)."""
        try:
            reply = self._session.get(
                self._url,
                headers={"X-Subject-Token": token},
                authenticated=True,
                raise_exc=False,
            )
        except ksa.ClientException as exc:
            LOG.error("cannot validate a token at Keystone: %s", type(exc).__name__)
            raise KeystoneUnavailable(type(exc).__name__) from None
        if reply.status_code == 404:
            raise TokenRefused()
        if reply.status_code != 200:
            LOG.error("Keystone answered %d to a token validation", reply.status_code)
            raise KeystoneUnavailable(f"Keystone answered {reply.status_code}")
        try:
            body = reply.json()
        except ValueError:
            raise KeystoneUnavailable("Keystone's token body is not JSON") from None
        return _identity(body, token)
