"""Where the Kubernetes API is and how to authenticate: a kubeconfig (its current context
or a named one), an explicit URL and token file, or the in-cluster service account.

Supported credentials: bearer tokens (inline or ``tokenFile``) and client certificates
(files, or inline data written to private temporary files because Python's ``ssl`` loads
certificate chains from files only). Exec and auth-provider plugins are not supported.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbaas.config import KubernetesSettings
from lbaas.errors import ConfigError

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class KubeConnection:
    server: str
    token: str | None = None
    ca_file: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    insecure: bool = False

    def ssl_context(self) -> ssl.SSLContext | bool:
        if not self.server.startswith("https"):
            return True
        if self.insecure:
            return False
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.client_cert_file:
            context.load_cert_chain(self.client_cert_file, self.client_key_file)
        return context


def _private_copy(data_b64: str, suffix: str) -> str:
    handle, path = tempfile.mkstemp(prefix="lbaas-kube-", suffix=suffix)
    with os.fdopen(handle, "wb") as out:
        out.write(base64.b64decode(data_b64))
    return path


def _file_or_data(entry: dict[str, Any], key: str, suffix: str) -> str | None:
    if entry.get(key):
        return str(entry[key])
    if entry.get(f"{key}-data"):
        return _private_copy(str(entry[f"{key}-data"]), suffix)
    return None


def _named(items: list[dict[str, Any]], name: str, what: str) -> dict[str, Any]:
    for item in items or ():
        if item.get("name") == name:
            return dict(item.get(what) or {})
    raise ConfigError(f"kubeconfig: no {what} named {name!r}")


def from_kubeconfig(path: Path, context_name: str | None) -> KubeConnection:
    import yaml

    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    name = context_name or config.get("current-context")
    if not name:
        raise ConfigError(f"kubeconfig {path} has no current-context")
    context = _named(config.get("contexts") or [], name, "context")
    cluster = _named(config.get("clusters") or [], context.get("cluster", ""), "cluster")
    user = _named(config.get("users") or [], context.get("user", ""), "user")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    return KubeConnection(
        server=str(cluster["server"]).rstrip("/"),
        token=token,
        ca_file=_file_or_data(cluster, "certificate-authority", ".crt"),
        client_cert_file=_file_or_data(user, "client-certificate", ".crt"),
        client_key_file=_file_or_data(user, "client-key", ".key"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
    )


def from_settings(settings: KubernetesSettings) -> KubeConnection:
    if settings.api_url:
        token = settings.token_file.read_text().strip() if settings.token_file else None
        ca = str(settings.ca_file) if settings.ca_file else None
        return KubeConnection(server=settings.api_url.rstrip("/"), token=token, ca_file=ca)
    if settings.kubeconfig:
        return from_kubeconfig(settings.kubeconfig, settings.context)
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    if host and (IN_CLUSTER_DIR / "token").exists():
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        return KubeConnection(
            server=f"https://{host}:{port}",
            token=(IN_CLUSTER_DIR / "token").read_text().strip(),
            ca_file=str(IN_CLUSTER_DIR / "ca.crt"),
        )
    raise ConfigError("kubernetes: set api_url or kubeconfig (or run inside a cluster)")
