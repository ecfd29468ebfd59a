"""The operator's switches of Octavia's ``[api_settings]``: what a deployment refuses.

Disabled TLS-terminated, PROMETHEUS and PING resources, a UDP-CONNECT minimum delay, a
minimum TLS version and a cipher prohibit-list, each a 400 in Octavia's words that
changes nothing; the operator's TLS defaults filling what requests leave out, and checked
against the policy at start-up.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from lbaas.api.app import create_app
from lbaas.api.services import ApiServices
from lbaas.errors import ConfigError
from tests.api.test_listeners import refused
from tests.support.api_client import Api
from tests.support.certificates import issue, make_ca
from tests.support.key_manager import store_certificate_container

LISTENERS, POOLS, MONITORS = "/v2/lbaas/listeners", "/v2/lbaas/pools", "/v2/lbaas/healthmonitors"
PROHIBITED = "AES128-SHA:DES-CBC3-SHA"


def _post(api: Api, path: str, wrapper: str, body: dict[str, Any]) -> Any:
    return api.post(path, {wrapper: body})


class TestDisabledResources:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {
            "api": {
                "allow_tls_terminated_listeners": False,
                "allow_prometheus_listeners": False,
                "allow_ping_health_monitors": False,
                "udp_connect_min_interval_health_monitor": 10,
            }
        }

    def test_each_disabled_resource_is_refused(self, api: Api) -> None:
        lb = api.create_lb()["id"]
        for protocol, port in (("TERMINATED_HTTPS", 443), ("PROMETHEUS", 9100)):
            body = {"loadbalancer_id": lb, "protocol": protocol, "protocol_port": port}
            refused(
                api, lb, lambda b=body: _post(api, LISTENERS, "listener", b), 400,
                f"The selected protocol is not allowed in this deployment: {protocol}",
            )  # fmt: skip
        pool = api.create_pool(lb)["id"]
        ping = {"pool_id": pool, "type": "PING", "delay": 5, "timeout": 3, "max_retries": 3}
        refused(
            api, lb, lambda: _post(api, MONITORS, "healthmonitor", ping), 400,
            "The selected type is not allowed in this deployment: PING", watch=MONITORS,
        )  # fmt: skip
        udp = api.create_pool(lb, protocol="UDP")["id"]
        fast = {"pool_id": udp, "type": "UDP-CONNECT", "delay": 5, "timeout": 3, "max_retries": 3}
        refused(
            api, lb, lambda: _post(api, MONITORS, "healthmonitor", fast), 400,
            "The request delay value 5 should be larger than 10 for UDP-CONNECT health "
            "monitor type.", watch=MONITORS,
        )  # fmt: skip
        monitor = api.create_healthmonitor(lb, udp, type="UDP-CONNECT", delay=10, timeout=3)
        path = f"{MONITORS}/{monitor['id']}"
        refused(
            api, lb, lambda: api.put(path, {"healthmonitor": {"delay": 9}}), 400,
            "should be larger than 10", watch=MONITORS,
        )  # fmt: skip
        # What the switches leave alone still works.
        api.create_healthmonitor(lb, pool, type="TCP")
        api.create_listener(lb, protocol="HTTP", protocol_port=80)


class TestTlsPolicy:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"api": {"minimum_tls_version": "TLSv1.2", "tls_cipher_prohibit_list": PROHIBITED}}

    def test_old_versions_and_prohibited_ciphers_are_refused_where_sent(
        self, api: Api, client: TestClient
    ) -> None:
        lb = api.create_lb()["id"]
        tls = {
            "loadbalancer_id": lb,
            "protocol": "TERMINATED_HTTPS",
            "protocol_port": 443,
            "default_tls_container_ref": store_certificate_container(
                client, api.project, issue(make_ca(), "policy.example.com")
            ),
        }
        cases: list[tuple[dict[str, Any], str]] = [
            (
                {"tls_versions": ["TLSv1", "TLSv1.1", "TLSv1.2"]},
                "Requested TLS versions are less than the minimum: TLSv1, TLSv1.1 < TLSv1.2",
            ),
            (
                {"tls_ciphers": "ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA:DES-CBC3-SHA"},
                "The following ciphers have been prohibited by an administrator: "
                "AES128-SHA, DES-CBC3-SHA",
            ),
        ]
        for extra, message in cases:
            body = {**tls, **extra}
            refused(api, lb, lambda b=body: _post(api, LISTENERS, "listener", b), 400, message)
            pool = {"loadbalancer_id": lb, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                    "tls_enabled": True, **extra}  # fmt: skip
            refused(api, lb, lambda b=pool: _post(api, POOLS, "pool", b), 400, message, watch=POOLS)
        listener = api.create_listener(lb, **tls)  # the defaults satisfy the policy
        assert listener["tls_versions"] == ["TLSv1.2", "TLSv1.3"]
        path = f"{LISTENERS}/{listener['id']}"
        refused(
            api, lb, lambda: api.put(path, {"listener": {"tls_versions": ["TLSv1.1"]}}), 400,
            "Requested TLS versions are less than the minimum: TLSv1.1 < TLSv1.2",
        )  # fmt: skip
        pool = api.create_pool(lb, tls_enabled=True)
        pool_path = f"{POOLS}/{pool['id']}"
        refused(
            api, lb, lambda: api.put(pool_path, {"pool": {"tls_ciphers": "DES-CBC3-SHA"}}), 400,
            "prohibited by an administrator: DES-CBC3-SHA", watch=POOLS,
        )  # fmt: skip
        assert api.put(pool_path, {"pool": {"tls_versions": ["TLSv1.3"]}}).status_code == 200
        api.wait_lb(lb)
        # A plain listener's TLS fields are dropped, not judged (as the reference does).
        api.create_listener(lb, protocol="HTTP", protocol_port=80, tls_versions=["TLSv1"])


class TestOperatorDefaults:
    """``default_listener_*`` and ``default_pool_*`` fill what a request leaves out, and a
    TLS 1.3-only deployment is one where they and the minimum agree."""

    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {
            "api": {
                "minimum_tls_version": "TLSv1.3",
                "default_listener_tls_versions": ["TLSv1.3"],
                "default_pool_tls_versions": ["TLSv1.3"],
                "default_listener_ciphers": "TLS_AES_256_GCM_SHA384",
                "default_pool_ciphers": "TLS_CHACHA20_POLY1305_SHA256",
                "default_listener_alpn_protocols": ["http/1.1"],
                "default_pool_alpn_protocols": ["h2"],
            }
        }

    def test_what_a_request_leaves_out_is_the_operators_default(
        self, api: Api, client: TestClient
    ) -> None:
        lb = api.create_lb()["id"]
        ref = store_certificate_container(client, api.project, issue(make_ca(), "d.example.com"))
        listener = api.create_listener(
            lb, protocol="TERMINATED_HTTPS", protocol_port=443, default_tls_container_ref=ref
        )
        seen = (listener["tls_versions"], listener["tls_ciphers"], listener["alpn_protocols"])
        assert seen == (["TLSv1.3"], "TLS_AES_256_GCM_SHA384", ["http/1.1"])
        pool = api.create_pool(lb, tls_enabled=True)
        seen = (pool["tls_versions"], pool["tls_ciphers"], pool["alpn_protocols"])
        assert seen == (["TLSv1.3"], "TLS_CHACHA20_POLY1305_SHA256", ["h2"])
        # What is sent is kept, and judged against the minimum as before.
        sent = api.create_pool(lb, tls_enabled=True, alpn_protocols=["http/1.1", "http/1.0"])
        assert sent["alpn_protocols"] == ["http/1.1", "http/1.0"]
        assert sent["tls_versions"] == ["TLSv1.3"]
        body = {"loadbalancer_id": lb, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                "tls_enabled": True, "tls_versions": ["TLSv1.2"]}  # fmt: skip
        refused(
            api, lb, lambda: _post(api, POOLS, "pool", body), 400,
            "Requested TLS versions are less than the minimum: TLSv1.2 < TLSv1.3", watch=POOLS,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            {"tls_cipher_prohibit_list": "ECDHE-RSA-AES128-GCM-SHA256"},
            "api.default_listener_ciphers conflicts with the prohibit list. Conflicting "
            "ciphers: ECDHE-RSA-AES128-GCM-SHA256",
        ),
        (
            {"tls_cipher_prohibit_list": "AES128-SHA", "default_pool_ciphers": "AES128-SHA"},
            "api.default_pool_ciphers conflicts with the prohibit list. Conflicting "
            "ciphers: AES128-SHA",
        ),
        (
            {"minimum_tls_version": "TLSv1.3"},
            "api.default_listener_tls_versions names versions less than the minimum: "
            "TLSv1.2 < TLSv1.3",
        ),
        (
            {"minimum_tls_version": "TLSv1.3", "default_listener_tls_versions": ("TLSv1.3",)},
            "api.default_pool_tls_versions names versions less than the minimum: TLSv1.2 < TLSv1.3",
        ),
    ],
)
def test_a_policy_the_defaults_break_stops_the_api_at_start(
    plane: Any, policy: dict[str, Any], message: str
) -> None:
    services: ApiServices = plane.services
    settings = services.settings.model_copy(
        update={"api": services.settings.api.model_copy(update=policy)}
    )
    with pytest.raises(ConfigError, match=message):
        create_app(ApiServices(settings, services.database, services.providers))
