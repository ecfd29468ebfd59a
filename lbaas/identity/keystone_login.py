"""A person logging in to the dashboard: a password exchanged for a Keystone token.

The browser cannot ask Keystone itself (another origin: Keystone would need CORS set up
for every lbaas address), so the dashboard posts the password to lbaas, which makes the
same ``POST /v3/auth/tokens`` the ``openstack`` CLI makes, scoped to the named project,
and hands the token back; from then on the page sends it as ``X-Auth-Token`` and every
call is validated and authorised like any other client's. lbaas keeps neither the
password nor the token, and logs neither. A Keystone that refuses the password (or the
project) is ``LoginRefused``; one that cannot be asked is ``KeystoneUnavailable``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from keystoneauth1 import exceptions as ksa
from keystoneauth1 import session

from lbaas.identity.keystone_tokens import KeystoneUnavailable, tokens_url

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Login:
    username: str
    password: str
    project: str
    domain: str


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_at: str
    user: str
    project: str


class LoginRefused(Exception):
    """Keystone refused the credentials or the project scope (its 401)."""


def _body(login: Login) -> dict[str, object]:
    domain = {"name": login.domain}
    user = {"name": login.username, "domain": domain, "password": login.password}
    return {
        "auth": {
            "identity": {"methods": ["password"], "password": {"user": user}},
            "scope": {"project": {"name": login.project, "domain": domain}},
        }
    }


def issue_token(auth_url: str, login: Login, timeout: float) -> IssuedToken:
    """A project-scoped token for ``login`` (blocking), with its expiry (ISO 8601)."""
    http = session.Session(timeout=timeout)
    try:
        reply = http.post(
            tokens_url(auth_url),
            json=_body(login),
            params={"nocatalog": "1"},
            authenticated=False,
            raise_exc=False,
            # keystoneauth1 logs a request's body at DEBUG: here, the password.
            log=False,
        )
    except ksa.ClientException as exc:
        LOG.error("cannot ask Keystone for a dashboard login: %s", type(exc).__name__)
        raise KeystoneUnavailable(type(exc).__name__) from None
    if reply.status_code in (400, 401, 403, 404):
        raise LoginRefused()
    token = reply.headers.get("X-Subject-Token")
    if reply.status_code != 201 or not token:
        LOG.error("Keystone answered %d to a dashboard login", reply.status_code)
        raise KeystoneUnavailable(f"Keystone answered {reply.status_code}")
    try:
        body = reply.json()["token"]
        return IssuedToken(
            token=token,
            expires_at=str(body["expires_at"]),
            user=str(body["user"]["name"]),
            project=str(body["project"]["name"]),
        )
    except (ValueError, KeyError, TypeError):
        raise KeystoneUnavailable("Keystone's token body is not what v3 says") from None
