"""Where the Kubernetes API is and how to authenticate, as a lightkube ``SingleConfig``:
an explicit URL (with a token file and a CA file), a kubeconfig (its current context or a
named one), or the in-cluster service account.

lightkube reads kubeconfig files itself (tokens, ``tokenFile``, client certificates as
files or inline data, ``insecure-skip-tls-verify``, exec plugins). What is added here:
its errors become ``ConfigError``, and a context without a user (``kubectl proxy``, a
plain-HTTP test server) gets an empty one, since lightkube 1.0.1 refuses a config with
no user at all. The leader-election Lease's namespace defaults, inside a cluster, to the
service account's own.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lightkube import KubeConfig
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import Cluster, User
from lightkube.core.exceptions import ConfigError as LightkubeConfigError

from lbaas.config import KubernetesSettings
from lbaas.errors import ConfigError

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def for_server(
    url: str, token: str | None = None, ca_file: str | None = None, insecure: bool = False
) -> SingleConfig:
    """An API server at ``url`` (plain HTTP needs neither token nor CA)."""
    cluster = Cluster(server=url.rstrip("/"), certificate_auth=ca_file, insecure=insecure)
    config = KubeConfig.from_one(cluster=cluster, user=User(token=token))
    return _single(config, None, url)


def from_kubeconfig(path: Path, context_name: str | None) -> SingleConfig:
    try:
        config = KubeConfig.from_file(path)
    except (OSError, ValueError, LightkubeConfigError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    return _single(config, context_name, str(path))


def _single(config: KubeConfig, context_name: str | None, where: str) -> SingleConfig:
    try:
        single = config.get(context_name)
    except LightkubeConfigError as exc:
        raise ConfigError(f"kubeconfig {where}: {exc}") from exc
    except KeyError as exc:
        raise ConfigError(f"kubeconfig {where}: no cluster or user named {exc}") from exc
    if single is None:
        raise ConfigError(f"kubeconfig {where} has no current-context")
    if single.user is None:
        single = single._replace(user=User())
    return single


def lease_namespace(settings: KubernetesSettings) -> str:
    """Where the leader-election Lease lives: as set, else the pod's own namespace inside
    a cluster, else ``default``."""
    if settings.lease_namespace:
        return settings.lease_namespace
    with contextlib.suppress(OSError):
        own = (IN_CLUSTER_DIR / "namespace").read_text().strip()
        if own:
            return own
    return "default"


def from_settings(settings: KubernetesSettings) -> SingleConfig:
    if settings.api_url:
        token = settings.token_file.read_text().strip() if settings.token_file else None
        ca = str(settings.ca_file) if settings.ca_file else None
        return for_server(settings.api_url, token=token, ca_file=ca)
    if settings.kubeconfig:
        return from_kubeconfig(settings.kubeconfig, settings.context)
    if os.environ.get("KUBERNETES_SERVICE_HOST") and (IN_CLUSTER_DIR / "token").exists():
        try:
            return _single(KubeConfig.from_service_account(IN_CLUSTER_DIR), None, "in-cluster")
        except (KeyError, LightkubeConfigError) as exc:
            raise ConfigError(f"in-cluster service account: {exc}") from exc
    raise ConfigError("kubernetes: set api_url or kubeconfig (or run inside a cluster)")
