"""Checking a request against its provider's declared capabilities, before any write.

Octavia answers 501 when a driver lacks an option; lbaas answers 400 in Octavia's error
shape with the same wording, because the request is what is wrong for that provider and
clients treat 4xx as "fix your input" (the issue brief asks for 400).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable, Mapping
from enum import StrEnum
from typing import Any

from lbaas.api.services import ApiServices
from lbaas.api.validation.listener import DEFAULT_TIMEOUTS
from lbaas.errors import InvalidInput
from lbaas.model.enums import ListenerProtocol, MemberDownPolicy, PoolProtocol


def require_capability(
    services: ApiServices, provider: str, what: str, value: StrEnum | str, supported_attr: str
) -> None:
    caps = services.providers.capabilities(provider)
    supported: Collection[object] = getattr(caps, supported_attr)
    if value not in supported:
        note = caps.refusal_notes.get(str(value))
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: {what} {value}"
            + (f". {note}" if note else "")
        )


def require_datagram_ip_version(
    services: ApiServices, provider: str, protocol: str, address: str | None, what: str
) -> None:
    """400 if the provider balances ``protocol`` (UDP) without ``address``'s IP version."""
    versions = services.providers.capabilities(provider).datagram_ip_versions
    if versions is None or address is None or protocol != PoolProtocol.UDP.value:
        return
    version = ipaddress.ip_address(address).version
    if version not in versions:
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: IPv{version} "
            f"{what} for {protocol} (it balances UDP over IPv"
            f"{', IPv'.join(str(v) for v in sorted(versions))} only)"
        )


def require_algorithm_for_protocol(
    services: ApiServices, provider: str, pool_protocol: str, algorithm: str
) -> None:
    """400 if the provider balances pools of ``pool_protocol`` without ``algorithm``."""
    caps = services.providers.capabilities(provider)
    allowed = caps.lb_algorithms_by_pool_protocol.get(PoolProtocol(pool_protocol))
    if allowed is not None and algorithm not in allowed:
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: lb_algorithm "
            f"{algorithm} for {pool_protocol} pools (it offers "
            f"{', '.join(sorted(allowed))})"
        )


def require_allowed_cidrs(
    services: ApiServices, provider: str, protocol: ListenerProtocol, cidrs: Collection[str] | None
) -> None:
    """400 if ``cidrs`` restrict a ``protocol`` listener its provider cannot filter by source.

    allowed_cidrs is a security control: a provider that would accept it and let every
    source in anyway must refuse it instead (``ProviderCapabilities.allowed_cidrs_protocols``).
    """
    if not cidrs:
        return
    if protocol not in services.providers.capabilities(provider).allowed_cidrs_protocols:
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: allowed_cidrs on "
            f"{protocol.value} listeners (its data plane cannot drop the other sources, "
            "so the restriction would not be enforced)"
        )


def require_vip_sg_enforced(
    services: ApiServices, provider: str, protocols: Collection[ListenerProtocol]
) -> None:
    """400 unless the provider can filter the sources of every listener protocol given.

    A VIP's security groups become each listener's source networks, which the data plane
    enforces where it enforces ``allowed_cidrs``; a provider (or a listener protocol) that
    cannot drop the other sources must refuse the groups, never accept and ignore them."""
    supported = services.providers.capabilities(provider).allowed_cidrs_protocols
    if not supported:
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: vip_sg_ids (its "
            "data plane cannot filter a VIP's sources, so the groups would not be enforced)"
        )
    for protocol in sorted(set(protocols) - set(supported)):
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: vip_sg_ids with "
            f"{protocol.value} listeners (its data plane cannot drop the sources the "
            "groups do not allow)"
        )


def require_pool_tls(
    services: ApiServices, provider: str, protocol: str, tls_enabled: bool
) -> None:
    """400 if a re-encrypting pool (``tls_enabled``) is of a protocol the provider cannot
    talk TLS to members on (``ProviderCapabilities.pool_tls_protocols``): accepting it
    would send the members' traffic in the clear."""
    if tls_enabled and PoolProtocol(protocol) not in (
        services.providers.capabilities(provider).pool_tls_protocols
    ):
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: tls_enabled on "
            f"{protocol} pools (its data plane cannot encrypt to members, so the traffic "
            "would go in the clear)"
        )


def require_additional_vips(services: ApiServices, provider: str, count: int) -> None:
    """400 if additional VIPs are asked of a provider whose data plane binds only the
    primary one (``ProviderCapabilities.additional_vips``)."""
    if count and not services.providers.capabilities(provider).additional_vips:
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: additional_vips "
            "(its data plane serves the primary VIP only, so the other addresses would "
            "never answer)"
        )


_MEMBER_DOWN_WHY = {
    (MemberDownPolicy.REROUTE, False): "a connection cannot move to another member "
    "mid-stream; cut closes it, and the client's new connection goes to a healthy member",
    (MemberDownPolicy.CUT, True): "a UDP flow has no connection to close; reroute sends "
    "its next datagrams to a healthy member",
}


def require_member_down_policy(
    services: ApiServices, provider: str, protocol: str, policy: MemberDownPolicy
) -> None:
    """400 unless the provider's data plane carries out ``policy`` on ``protocol`` pools
    (``ProviderCapabilities.member_down_policies``; ``keep``, doing nothing, always)."""
    if policy is MemberDownPolicy.KEEP:
        return
    caps = services.providers.capabilities(provider)
    if policy in caps.member_down_policies.get(PoolProtocol(protocol), frozenset()):
        return
    datagram = protocol == PoolProtocol.UDP.value
    why = _MEMBER_DOWN_WHY.get((policy, datagram), "its data plane cannot do it")
    raise InvalidInput(
        f"Provider '{provider}' does not support a requested option: "
        f"lbaas_member_down_policy {policy.value} on {protocol} pools ({why})"
    )


def _is_default(name: str, value: int) -> bool:
    if name == "connection_limit":
        return value in (-1, 0)  # both "no limit", as the amphora's HAProxy takes them
    return value == DEFAULT_TIMEOUTS[name]


def require_listener_options(
    services: ApiServices,
    provider: str,
    protocol: ListenerProtocol,
    values: Mapping[str, Any],
    names: Iterable[str],
) -> None:
    """400 if a listener option in ``names`` (``LISTENER_OPTIONS``) has a value other than
    Octavia's default on a protocol where the provider does not enforce it, or a timeout
    that is not whole seconds where the data plane counts seconds. ``values``: the merged
    listener (defaults filled in)."""
    caps = services.providers.capabilities(provider)
    for name in names:
        value = int(values[name])
        where = f"{name} {value} on {protocol.value} listeners"
        if not _is_default(name, value) and protocol not in caps.listener_options.get(name, ()):
            note = caps.refusal_notes.get(name)
            default = "-1" if name == "connection_limit" else str(DEFAULT_TIMEOUTS[name])
            raise InvalidInput(
                f"Provider '{provider}' does not support a requested option: {where}; "
                f"only Octavia's default ({default}) is accepted there"
                + (f". {note}" if note else "")
            )
        if name.startswith("timeout_") and protocol in caps.whole_second_timeouts and value % 1000:
            raise InvalidInput(
                f"Provider '{provider}' does not support a requested option: {where} (its "
                "data plane keeps flow timeouts in whole seconds; use a multiple of 1000)"
            )
