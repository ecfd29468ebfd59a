"""``lbaas serve`` with ``auth_strategy = keystone`` against a real Keystone
(tests/support/keystone_server.py): its fernet tokens are validated with lbaas's service
user; a missing, invalid, expired or revoked token, and the token of a disabled project,
get 401 in Octavia's body; a revoked token is honoured once the cache lets it go; service
tokens count only with a service role."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest
from pydantic import SecretStr

from lbaas.config import KeystoneAuthtokenSettings
from lbaas.metadata.agent import KeystoneCredentials
from lbaas.metadata.base import RegistryUnavailable
from lbaas.metadata.proxy import HttpPortSource
from tests.api.resource_base import assert_fault
from tests.e2e.conftest import Served
from tests.e2e.keystone.conftest import serve_with_keystone
from tests.support.api_client import LOOPBACK_SUBNET
from tests.support.keystone_server import KeystoneServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
CACHE_SECONDS = 3.0
LBS = "/v2/lbaas/loadbalancers"


@pytest.fixture(scope="module")
def lbaas(keystone: KeystoneServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("tokens")
    yield from serve_with_keystone(
        tmp,
        keystone,
        "lbaas-tokens",
        token_cache_time=CACHE_SECONDS,
        service_token_roles_required=True,
    )


def _get(lbaas: Served, token: str | None, path: str = LBS, **headers: str) -> httpx.Response:
    sent = {"X-Auth-Token": token, **headers} if token else headers
    return httpx.get(lbaas.url + path, headers=sent, timeout=30)


def _unauthorized(reply: httpx.Response, keystone: KeystoneServer) -> None:
    assert_fault(reply, 401, "requires authentication")
    assert reply.headers["www-authenticate"] == f'Keystone uri="{keystone.url}"'


def _member(keystone: KeystoneServer, name: str, project: str) -> str:
    keystone.user(name, f"{name}-pw", project, ("member", "reader"))
    return keystone.token(name, f"{name}-pw", project)


def _after_the_cache() -> None:
    time.sleep(CACHE_SECONDS + 0.5)


def test_a_real_token_names_the_caller(lbaas: Served, keystone: KeystoneServer) -> None:
    token = _member(keystone, "tok-alice", "tok-alpha")
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    # The headers a client sends are not who it is: the token is.
    lie = {"X-Auth-Token": token, "X-Project-Id": "someone-else", "X-Roles": "admin"}
    made = httpx.post(lbaas.url + LBS, json=body, headers=lie, timeout=30)
    assert made.status_code == 201, made.text
    assert made.json()["loadbalancer"]["project_id"] == keystone.project("tok-alpha")
    for path in (LBS, "/key-manager/v1/secrets", "/v2/ports"):
        assert _get(lbaas, token, path).status_code == 200, path


@pytest.mark.parametrize("path", [LBS, "/key-manager/v1/secrets", "/v2.0/networks"])
def test_missing_and_invalid_tokens_get_401(
    lbaas: Served, keystone: KeystoneServer, path: str
) -> None:
    _unauthorized(_get(lbaas, None, path), keystone)
    _unauthorized(_get(lbaas, "gAAAAABnot-a-fernet-token", path), keystone)
    _unauthorized(_get(lbaas, None, path, **{"X-Project-Id": "p", "X-Roles": "admin"}), keystone)


def test_a_revoked_token_is_refused_within_the_cache_time(
    lbaas: Served, keystone: KeystoneServer
) -> None:
    token = _member(keystone, "tok-bob", "tok-alpha")
    assert _get(lbaas, token).status_code == 200
    keystone.revoke(token)
    # Remembered: no round trip to Keystone, so the revocation is not seen yet.
    assert _get(lbaas, token).status_code == 200
    _after_the_cache()
    _unauthorized(_get(lbaas, token), keystone)


def test_a_token_of_a_disabled_project_is_refused(lbaas: Served, keystone: KeystoneServer) -> None:
    token = _member(keystone, "tok-carol", "tok-gamma")
    assert _get(lbaas, token).status_code == 200
    keystone.set_project_enabled(keystone.project("tok-gamma"), False)
    try:
        _after_the_cache()
        _unauthorized(_get(lbaas, token), keystone)
    finally:
        keystone.set_project_enabled(keystone.project("tok-gamma"), True)


def test_an_expired_token_is_refused(lbaas: Served, keystone: KeystoneServer) -> None:
    keystone.user("tok-dave", "tok-dave-pw", "tok-alpha", ("member",))
    with keystone.short_lived(expiration=2) as short_url:
        token = keystone.token("tok-dave", "tok-dave-pw", "tok-alpha", url=short_url)
    # Fernet tokens carry their expiry: lbaas's Keystone refuses it once it has passed.
    time.sleep(2.5)
    _unauthorized(_get(lbaas, token), keystone)


def test_service_tokens_need_a_service_role(lbaas: Served, keystone: KeystoneServer) -> None:
    user = _member(keystone, "tok-erin", "tok-alpha")
    service_name, service_password = keystone.service_user("tok-some-service")
    service = keystone.token(service_name, service_password, "service")
    plain = _member(keystone, "tok-frank", "tok-alpha")
    assert _get(lbaas, user, **{"X-Service-Token": service}).status_code == 200
    # service_token_roles_required: a service token without the service role is refused.
    _unauthorized(_get(lbaas, user, **{"X-Service-Token": plain}), keystone)
    _unauthorized(_get(lbaas, user, **{"X-Service-Token": "forged"}), keystone)


def test_an_agents_metadata_proxies_read_their_hosts_ports_with_a_token(
    lbaas: Served, keystone: KeystoneServer
) -> None:
    """The netns agents' port source (``HttpPortSource``) in keystone mode: refused without
    a token; with the agent's service user (``[keystone_authtoken]`` in its settings, a
    global observer) it reads the ports bound to its host, whichever project owns them."""
    owner = _member(keystone, "tok-port-owner", "tok-ports")
    port = {
        "network_id": _network(lbaas, owner),
        "name": "bound-to-hq",
        "binding:host_id": "host-q",
        "device_id": "instance-q",
        "fixed_ips": [{"subnet_id": LOOPBACK_SUBNET}],
    }
    made = httpx.post(
        lbaas.url + "/v2.0/ports", json={"port": port}, headers={"X-Auth-Token": owner}, timeout=30
    )
    assert made.status_code == 201, made.text
    with closing(HttpPortSource(lbaas.url)) as anonymous:
        with pytest.raises(RegistryUnavailable, match="401"):
            anonymous.ports_of_host("host-q")
    password = "agent-q-pw"
    keystone.user("agent-q", password, "service", ("service", "load-balancer_global_observer"))
    settings = KeystoneAuthtokenSettings(
        auth_url=keystone.url, username="agent-q", password=password, project_name="service"
    )
    with closing(HttpPortSource(lbaas.url, credentials=KeystoneCredentials(settings))) as found:
        assert [p.device_id for p in found.ports_of_host("host-q")] == ["instance-q"]
    wrong = settings.model_copy(update={"password": SecretStr("not-it")})
    with closing(HttpPortSource(lbaas.url, credentials=KeystoneCredentials(wrong))) as refused:
        with pytest.raises(RegistryUnavailable, match="no Keystone token"):
            refused.ports_of_host("host-q")


def _network(lbaas: Served, token: str) -> str:
    subnet = httpx.get(
        f"{lbaas.url}/v2.0/subnets/{LOOPBACK_SUBNET}", headers={"X-Auth-Token": token}
    )
    assert subnet.status_code == 200, subnet.text
    return str(subnet.json()["subnet"]["network_id"])
