"""The operator's TLS defaults (``[api] default_listener_*``, ``default_pool_*``) are read
from the file or the environment and refused, naming the field, when malformed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.config import LISTENER_TLS_CIPHERS, load_settings
from lbaas.errors import ConfigError


def test_the_defaults_are_octavias_lists_until_the_operator_sets_them(tmp_path: Path) -> None:
    api = load_settings(environ={}).api
    assert api.default_listener_tls_versions == ("TLSv1.2", "TLSv1.3")
    assert api.default_pool_alpn_protocols == ("h2", "http/1.1", "http/1.0")
    assert api.default_listener_ciphers == LISTENER_TLS_CIPHERS
    file = tmp_path / "lbaas.toml"
    file.write_text('[api]\ndefault_pool_tls_versions = ["TLSv1.3"]\n')
    env = {"LBAAS_API__DEFAULT_LISTENER_ALPN_PROTOCOLS": '["http/1.1"]'}
    api = load_settings(file, environ=env).api
    assert api.default_pool_tls_versions == ("TLSv1.3",)
    assert api.default_listener_alpn_protocols == ("http/1.1",)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("default_listener_tls_versions", []),
        ("default_pool_tls_versions", ["TLSv1.4"]),
        ("default_listener_alpn_protocols", ["spdy/3"]),
        ("default_pool_alpn_protocols", []),
        ("default_listener_ciphers", ""),
        ("default_pool_ciphers", "AES128-SHA; rm -rf /"),
    ],
)
def test_a_malformed_default_is_refused_naming_it(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"api.{field}"):
        load_settings(environ={}, overrides={"api": {field: value}})
