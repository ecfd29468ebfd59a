"""The operator's switches over what tenants may ask for (Octavia's ``[api_settings]``).

Disabling TLS-terminated, PROMETHEUS or PING resources, the smallest UDP-CONNECT delay, a
minimum TLS version and a cipher prohibit-list. Each check looks only at what a request
sent, as the reference does: a listener created before the operator raised the minimum
keeps working and can still be renamed. The defaults (``default_listener_*``,
``default_pool_*``) are checked against the policy once, when the API starts
(``check_defaults``), so nothing a tenant leaves out can break it.
"""

from __future__ import annotations

from collections.abc import Sequence

from lbaas.api.validation import tls
from lbaas.config import ApiSettings
from lbaas.errors import ConfigError, InvalidInput, ValidationFailure
from lbaas.model.enums import HealthMonitorType, ListenerProtocol


def _disabled(option: str, value: str) -> InvalidInput:
    return InvalidInput(f"The selected {option} is not allowed in this deployment: {value}")


def check_listener_protocol(api: ApiSettings, protocol: ListenerProtocol, offloads: bool) -> None:
    """``offloads``: the listener terminates TLS (TERMINATED_HTTPS, or PROMETHEUS with a
    certificate)."""
    if protocol is ListenerProtocol.PROMETHEUS and not api.allow_prometheus_listeners:
        raise _disabled("protocol", protocol.value)
    if offloads and not api.allow_tls_terminated_listeners:
        raise _disabled("protocol", protocol.value)


def check_monitor_type(api: ApiSettings, hm_type: str) -> None:
    if hm_type == HealthMonitorType.PING.value and not api.allow_ping_health_monitors:
        raise _disabled("type", hm_type)


def prohibited_ciphers(api: ApiSettings, ciphers: str) -> list[str]:
    """The names in the colon-separated ``ciphers`` that the operator prohibits, in order."""
    prohibited = set(filter(None, api.tls_cipher_prohibit_list.split(":")))
    return [name for name in ciphers.split(":") if name in prohibited]


def check_ciphers(api: ApiSettings, ciphers: str | None) -> None:
    refused = prohibited_ciphers(api, ciphers or "")
    if refused:
        raise ValidationFailure(
            "The following ciphers have been prohibited by an administrator: " + ", ".join(refused)
        )


def older_versions(api: ApiSettings, versions: Sequence[str]) -> list[str]:
    """The versions in ``versions`` older than the operator's minimum (none without one)."""
    if api.minimum_tls_version is None:
        return []
    floor = tls.TLS_VERSIONS.index(api.minimum_tls_version)
    return [v for v in versions if v in tls.TLS_VERSIONS and tls.TLS_VERSIONS.index(v) < floor]


def check_versions(api: ApiSettings, versions: Sequence[str] | None) -> None:
    older = older_versions(api, versions or ())
    if older:
        raise ValidationFailure(
            "Requested TLS versions are less than the minimum: "
            f"{', '.join(older)} < {api.minimum_tls_version}"
        )


def check_defaults(api: ApiSettings) -> None:
    """Refuse to start when the operator's defaults break the policy (Octavia does the same)."""
    for kind, defaults in (
        ("listener", tls.listener_defaults(api)),
        ("pool", tls.pool_defaults(api)),
    ):
        refused = prohibited_ciphers(api, defaults.ciphers)
        if refused:
            raise ConfigError(
                f"api.tls_cipher_prohibit_list: api.default_{kind}_ciphers conflicts with the "
                f"prohibit list. Conflicting ciphers: {', '.join(refused)}"
            )
        older = older_versions(api, defaults.versions)
        if older:
            raise ConfigError(
                f"api.minimum_tls_version: api.default_{kind}_tls_versions names versions "
                f"less than the minimum: {', '.join(older)} < {api.minimum_tls_version}"
            )
