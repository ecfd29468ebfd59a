"""Whether the API may listen where it is told to, given who it lets in.

``noauth`` believes every header: anyone who reaches the port is whoever they claim, an
administrator when they claim nothing. That is the embedded mode's convenience on a
loopback address and a hole anywhere else, so a start that would serve it beyond
loopback is refused in one line, unless the operator sets ``api.allow_insecure_noauth``
-- and then every start says so. Keystone (validated tokens) and ``keystone_headers``
(a trusted proxy in front) are not limited.
"""

from __future__ import annotations

import ipaddress

from lbaas.config import ApiSettings
from lbaas.errors import ConfigError


def is_loopback(host: str) -> bool:
    """Whether an address the API binds is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name (or a wildcard spelled oddly): it may be anything


def exposure_warning(api: ApiSettings) -> str | None:
    """The warning to print at start, None when there is nothing to say; raises
    ConfigError when the start must be refused."""
    if api.auth_strategy != "noauth" or is_loopback(api.host):
        return None
    if not api.allow_insecure_noauth:
        raise ConfigError(
            f"api.auth_strategy = noauth serves loopback addresses only, not {api.host}: "
            'use auth_strategy = "keystone", or set api.allow_insecure_noauth = true'
        )
    return (
        f"WARNING: noauth on {api.host}: anyone reaching port {api.port} acts as whoever "
        "their headers name, an administrator when they name none (api.allow_insecure_noauth)"
    )
