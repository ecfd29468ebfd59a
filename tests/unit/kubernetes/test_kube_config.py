"""Reading a kubeconfig through lightkube: the current or a named context, tokens (inline
or ``tokenFile``), inline CA data, a context without a user; what a client built from
it sends."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from lbaas.errors import ConfigError
from lbaas.integrations.kubernetes.base import Collection, Kind
from lbaas.integrations.kubernetes.kube_client import LightkubeKube
from lbaas.integrations.kubernetes.kube_config import for_server, from_kubeconfig

KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1}
- name: prod
  context: {cluster: c2, user: u2}
- name: proxy
  context: {cluster: c2}
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
    ca_data = base64.b64encode(b"-----PEM-----").decode()
    config.write_text(KUBECONFIG.replace("CA_DATA", ca_data).replace("TOKEN_FILE", str(token_file)))
    dev = from_kubeconfig(config, None)
    assert dev.cluster.server == "https://127.0.0.1:6443/"
    assert dev.cluster.certificate_auth_data == ca_data
    assert dev.user is not None and dev.user.token == "secret-one"
    prod = from_kubeconfig(config, "prod")
    assert (prod.cluster.server, prod.cluster.insecure) == ("http://127.0.0.1:8001", True)
    assert prod.user is not None and prod.user.token_file == str(token_file)
    proxy = from_kubeconfig(config, "proxy")
    assert proxy.user is not None and proxy.user.token is None
    with pytest.raises(ConfigError, match="staging"):
        from_kubeconfig(config, "staging")
    with pytest.raises(ConfigError, match="cannot read kubeconfig"):
        from_kubeconfig(tmp_path / "missing", None)


@pytest.mark.asyncio
async def test_the_token_reaches_the_server(kmock: Any) -> None:
    """A bearer token from the settings is sent as lightkube's client sends it."""
    kmock.resources["v1/services"] = {}
    kube = LightkubeKube(for_server(str(kmock.url), token="secret-three"))
    try:
        items, _ = await kube.list(Collection(Kind.SERVICES))
    finally:
        await kube.aclose()
    assert items == []
    sent = [
        {name.lower(): value for name, value in request.headers.items()}.get("authorization")
        for request in kmock
    ]
    assert sent == ["Bearer secret-three"]
