"""Reading a kubeconfig: the current or a named context, tokens, inline CA data."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from lbaas.errors import ConfigError
from lbaas.integrations.kubernetes.kube_connection import from_kubeconfig

KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1}
- name: prod
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443/", certificate-authority-data: CA_DATA}
- name: c2
  cluster: {server: "http://127.0.0.1:8001", insecure-skip-tls-verify: true}
users:
- name: u1
  user: {token: secret-one}
- name: u2
  user: {tokenFile: TOKEN_FILE}
"""


def test_current_and_named_contexts(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("secret-two\n")
    config = tmp_path / "config"
    config.write_text(
        KUBECONFIG.replace("CA_DATA", base64.b64encode(b"-----PEM-----").decode()).replace(
            "TOKEN_FILE", str(token_file)
        )
    )
    dev = from_kubeconfig(config, None)
    assert (dev.server, dev.token) == ("https://127.0.0.1:6443", "secret-one")
    assert dev.ca_file is not None and Path(dev.ca_file).read_bytes() == b"-----PEM-----"
    Path(dev.ca_file).unlink()
    prod = from_kubeconfig(config, "prod")
    assert (prod.server, prod.token, prod.insecure) == ("http://127.0.0.1:8001", "secret-two", True)
    assert prod.ssl_context() is True  # plain HTTP: nothing to verify
    with pytest.raises(ConfigError, match="staging"):
        from_kubeconfig(config, "staging")
