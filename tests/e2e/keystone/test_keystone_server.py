"""The real-Keystone fixture itself: a token from it, and Keystone's own answer to it."""

from __future__ import annotations

import pytest
from keystoneauth1 import session

from tests.support.keystone_server import KeystoneServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def test_a_user_gets_a_token_keystone_validates_and_revokes(keystone: KeystoneServer) -> None:
    keystone.user("fixture-alice", "alice-pw", "fixture-a", ("member", "load-balancer_member"))
    token = keystone.token("fixture-alice", "alice-pw", "fixture-a")
    admin = keystone.session("admin", keystone.admin_password, "admin")
    check = session.Session(timeout=10)

    def validate() -> int:
        headers = {"X-Auth-Token": admin.get_token() or "", "X-Subject-Token": token}
        url = keystone.url + "/auth/tokens"
        return check.get(url, headers=headers, authenticated=False, raise_exc=False).status_code

    shown = admin.get(keystone.url + "/auth/tokens", headers={"X-Subject-Token": token}).json()[
        "token"
    ]
    assert shown["project"]["name"] == "fixture-a"
    assert {r["name"] for r in shown["roles"]} >= {"member", "load-balancer_member"}
    assert validate() == 200
    keystone.revoke(token)
    assert validate() == 404
    endpoints = [e for s in keystone.catalog() if s["type"] == "identity" for e in s["endpoints"]]
    assert {e["url"] for e in endpoints} == {keystone.url}
    assert (keystone.directory / "fernet-keys" / "0").exists()
