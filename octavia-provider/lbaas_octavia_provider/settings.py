"""The driver's settings: one small INI file, read by Octavia's API and its driver agent.

Its path is ``$OCTAVIA_LBAAS_PROVIDER_CONFIG``, else /etc/octavia/lbaas-provider.ini. Not
an ``LBAAS_`` variable: lbaas's own processes read those as their settings. Octavia's
oslo.config is not used, so the package needs none of Octavia's internals; the driver
agent's socket paths are read from Octavia's own ``[driver_agent]`` when not given here.
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass

DEFAULT_PATH = "/etc/octavia/lbaas-provider.ini"
ENV = "OCTAVIA_LBAAS_PROVIDER_CONFIG"
SECTION = "lbaas"
# octavia-lib's own defaults, where neither this file nor Octavia's settings name them.
SOCKETS = {
    "status_socket": ("status_socket_path", "/var/run/octavia/status.sock"),
    "stats_socket": ("stats_socket_path", "/var/run/octavia/stats.sock"),
    "get_socket": ("get_socket_path", "/var/run/octavia/get.sock"),
}


@dataclass(frozen=True)
class Settings:
    url: str = "http://127.0.0.1:9876"
    # X-Auth-Token sent with every call, when lbaas validates tokens (api.auth_strategy =
    # keystone); empty where lbaas trusts the X-Project-Id/X-Roles headers (noauth on
    # loopback, keystone_headers behind a middleware) and the network path is private.
    token: str = ""
    timeout: float = 10.0
    # How long one call keeps retrying while lbaas is unreachable or busy (backoff).
    retry_seconds: float = 30.0
    # Which of Octavia's VIP fields lbaas is given: "subnet,address" where lbaas allocates
    # on the same subnet itself; add "port" where lbaas adopts Octavia's Neutron port.
    vip_fields: tuple[str, ...] = ("subnet", "address")
    poll_interval: float = 1.0
    full_push_interval: float = 30.0
    status_socket: str = SOCKETS["status_socket"][1]
    stats_socket: str = SOCKETS["stats_socket"][1]
    get_socket: str = SOCKETS["get_socket"][1]


def _octavia_socket(option: str, default: str) -> str:
    """Octavia's own ``[driver_agent]`` setting where this process has Octavia's config."""
    try:
        from oslo_config import cfg
    except ImportError:  # pragma: no cover - not inside Octavia
        return default
    try:
        return str(getattr(cfg.CONF.driver_agent, option))
    except (cfg.NoSuchOptError, AttributeError, cfg.NoSuchGroupError):
        return default


def load(path: str | None = None) -> Settings:
    """The settings of the file (missing keys keep their defaults; no file, all defaults)."""
    parser = configparser.ConfigParser()
    parser.read(path or os.environ.get(ENV) or DEFAULT_PATH)
    got = parser[SECTION] if parser.has_section(SECTION) else {}
    base = Settings()
    sockets = {
        key: got.get(key) or _octavia_socket(option, default)
        for key, (option, default) in SOCKETS.items()
    }
    vip = got.get("vip_fields")
    return Settings(
        url=str(got.get("url", base.url)).rstrip("/"),
        token=str(got.get("token", base.token)),
        timeout=float(got.get("timeout", base.timeout)),
        retry_seconds=float(got.get("retry_seconds", base.retry_seconds)),
        vip_fields=tuple(v.strip() for v in vip.split(",")) if vip else base.vip_fields,
        poll_interval=float(got.get("poll_interval", base.poll_interval)),
        full_push_interval=float(got.get("full_push_interval", base.full_push_interval)),
        **sockets,
    )
