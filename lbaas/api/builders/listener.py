"""Listener rows from requests: create (standalone POST and graph create) and update.

Create and update share one path: the request is laid over a base (the defaults on
create, the stored row on update) with Octavia's null-means-default rule, the merged
listener is validated as a whole, and only then is the row written. The certificate step
(which always fails here, see ``lbaas.api.validation.listener``) looks only at references
the request itself sent, as the reference does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lbaas.api.builders.common import add_new_row, new_object_columns
from lbaas.api.capabilities import (
    require_allowed_cidrs,
    require_capability,
    require_datagram_ip_version,
    require_listener_options,
    require_vip_sg_enforced,
)
from lbaas.api.certificates import require_certificates
from lbaas.api.schemas.listener import ListenerCommon, ListenerOptions, ListenerUpdate
from lbaas.api.services import ApiServices
from lbaas.api.validation import listener as rules
from lbaas.api.validation import operator_policy as policy
from lbaas.api.validation import tls
from lbaas.db import table_rows
from lbaas.db.listing import set_tags
from lbaas.db.session import Session
from lbaas.db.tables import ListenerRow, LoadBalancerRow, PoolRow
from lbaas.errors import NotFound
from lbaas.model.enums import (
    ClientAuthentication,
    ListenerProtocol,
    ProvisioningStatus,
)
from lbaas.providers.base import LISTENER_OPTIONS

# What each optional field becomes when omitted on create or sent as null.
NULL_MEANS: dict[str, Any] = {
    "name": None,
    "description": None,
    "connection_limit": -1,
    "default_pool_id": None,
    "insert_headers": {},
    **rules.DEFAULT_TIMEOUTS,
    "default_tls_container_ref": None,
    "sni_container_refs": [],
    "client_ca_tls_container_ref": None,
    "client_authentication": ClientAuthentication.NONE,
    "client_crl_container_ref": None,
    "allowed_cidrs": None,
    "tls_ciphers": None,
    "tls_versions": None,
    "alpn_protocols": None,
    "hsts_max_age": None,
    "hsts_include_subdomains": False,
    "hsts_preload": False,
}


def _check_sent_tls(
    services: ApiServices, data: ListenerOptions, settings: rules.ListenerSettings
) -> None:
    """The operator's cipher prohibit-list and minimum TLS version, on what was sent."""
    if not settings.offloads_tls:
        return  # the TLS options of a listener that does not terminate TLS are dropped
    api = services.settings.api
    if data.given("tls_ciphers"):
        policy.check_ciphers(api, data.tls_ciphers)
    if data.given("tls_versions"):
        policy.check_versions(api, data.tls_versions)


def pool_on_loadbalancer(session: Session, lb: LoadBalancerRow, pool_id: str) -> PoolRow:
    """A pool the listener's load balancer owns, else 404 as if it did not exist."""
    pool = session.get(PoolRow, pool_id)
    if (
        pool is None
        or pool.loadbalancer_id != lb.id
        or pool.provisioning_status == ProvisioningStatus.DELETED
    ):
        raise NotFound.of("Pool", pool_id)
    return pool


def _overlay(data: ListenerOptions, base: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for name, null_value in NULL_MEANS.items():
        if data.given(name):
            value = getattr(data, name)
            out[name] = null_value if value is None else value
    return out


def _settings(
    services: ApiServices, protocol: ListenerProtocol, v: Mapping[str, Any]
) -> rules.ListenerSettings:
    versions, alpn = v["tls_versions"], v["alpn_protocols"]
    return rules.with_tls_defaults(
        rules.ListenerSettings(
            protocol=protocol,
            insert_headers=dict(v["insert_headers"]),
            default_tls_container_ref=v["default_tls_container_ref"],
            sni_container_refs=tuple(v["sni_container_refs"]),
            client_ca_tls_container_ref=v["client_ca_tls_container_ref"],
            client_authentication=ClientAuthentication(v["client_authentication"]),
            client_crl_container_ref=v["client_crl_container_ref"],
            tls_ciphers=v["tls_ciphers"] or None,
            tls_versions=tuple(versions) if versions is not None else None,
            alpn_protocols=tuple(alpn) if alpn is not None else None,
            hsts_max_age=v["hsts_max_age"],
            hsts_include_subdomains=bool(v["hsts_include_subdomains"]),
            hsts_preload=bool(v["hsts_preload"]),
        ),
        tls.listener_defaults(services.settings.api),
    )


def _sent_refs(services: ApiServices, lb: LoadBalancerRow, data: ListenerOptions) -> None:
    """Fetch (and fail on) every certificate reference the request carried."""
    sni = list(data.sni_container_refs or [])
    default = data.default_tls_container_ref
    require_certificates(
        services,
        lb.project_id,
        [*sni, *([default] if default else [])],
        data.client_ca_tls_container_ref,
        data.client_crl_container_ref,
    )


def _check_default_pool(
    session: Session,
    lb: LoadBalancerRow,
    protocol: ListenerProtocol,
    pool: PoolRow | None,
    pool_id: str | None,
) -> None:
    if pool is None and pool_id is None:
        return
    if protocol is ListenerProtocol.PROMETHEUS:
        rules.raise_no_children()
    target = pool if pool is not None else pool_on_loadbalancer(session, lb, str(pool_id))
    rules.check_pool_protocol(protocol, target.protocol)


def _vip_addresses(lb: LoadBalancerRow) -> list[str]:
    extra = [v.get("ip_address") for v in lb.additional_vips or []]
    return [a for a in [lb.vip_address, *extra] if a]


def _check_port(
    session: Session, lb: LoadBalancerRow, protocol: ListenerProtocol, port: int
) -> None:
    others = table_rows.find_rows(
        session,
        ListenerRow,
        ListenerRow.loadbalancer_id == lb.id,
        ListenerRow.protocol_port == port,
        ListenerRow.provisioning_status != ProvisioningStatus.DELETED.value,
    )
    rules.check_port_free(protocol, port, [(o.protocol, o.protocol_port) for o in others])


def _store(row: ListenerRow, v: Mapping[str, Any], s: rules.ListenerSettings) -> None:
    """Write the merged values: plain options as they are (so a new optional field needs
    only its ``NULL_MEANS`` entry), the TLS settings as validated."""
    for name, value in v.items():
        setattr(row, name, value)
    row.connection_limit = int(v["connection_limit"])
    row.insert_headers = dict(v["insert_headers"])
    for key in rules.DEFAULT_TIMEOUTS:
        setattr(row, key, int(v[key]))
    row.default_tls_container_ref = s.default_tls_container_ref
    row.sni_container_refs = list(s.sni_container_refs)
    row.client_ca_tls_container_ref = s.client_ca_tls_container_ref
    row.client_authentication = s.client_authentication.value
    row.client_crl_container_ref = s.client_crl_container_ref
    row.tls_ciphers = s.tls_ciphers
    row.tls_versions = list(s.tls_versions) if s.tls_versions is not None else None
    row.alpn_protocols = list(s.alpn_protocols) if s.alpn_protocols is not None else None
    row.hsts_max_age = s.hsts_max_age
    row.hsts_include_subdomains = s.hsts_include_subdomains
    row.hsts_preload = s.hsts_preload


def build_listener(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    data: ListenerCommon,
    now: datetime,
    *,
    default_pool: PoolRow | None = None,
) -> ListenerRow:
    """Validate a new listener of ``lb`` (already locked) and add its row.

    ``default_pool`` is a pool the caller already holds (the graph create's resolved
    ``default_pool``); otherwise ``data.default_pool_id`` is looked up on ``lb``.
    """
    protocol = ListenerProtocol(data.protocol)
    require_capability(services, lb.provider, "protocol", protocol, "listener_protocols")
    require_datagram_ip_version(services, lb.provider, protocol.value, lb.vip_address, "VIP")
    values = _overlay(data, NULL_MEANS)
    settings = _settings(services, protocol, values)
    policy.check_listener_protocol(services.settings.api, protocol, settings.offloads_tls)
    rules.check_settings(settings)
    _check_sent_tls(services, data, settings)
    _check_port(session, lb, protocol, data.protocol_port)
    _check_default_pool(session, lb, protocol, default_pool, data.default_pool_id)
    if default_pool is not None:
        values["default_pool_id"] = default_pool.id
    values["allowed_cidrs"] = rules.normalise_cidrs(values["allowed_cidrs"])
    rules.check_cidrs(values["allowed_cidrs"], _vip_addresses(lb), lb.vip_sg_ids or [])
    require_allowed_cidrs(services, lb.provider, protocol, values["allowed_cidrs"])
    require_listener_options(services, lb.provider, protocol, values, LISTENER_OPTIONS)
    if lb.vip_sg_ids:
        require_vip_sg_enforced(services, lb.provider, [protocol])
    _sent_refs(services, lb, data)
    row = ListenerRow(
        **new_object_columns(lb.project_id, now, data=data),
        loadbalancer_id=lb.id,
        admin_state_up=bool(data.admin_state_up),
        protocol=protocol.value,
        protocol_port=data.protocol_port,
    )
    _store(row, values, settings)
    return add_new_row(session, row, data.tags)


def update_listener(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    row: ListenerRow,
    data: ListenerUpdate,
    now: datetime,
) -> None:
    """Validate the stored listener merged with a PUT and write it (statuses are the caller's)."""
    protocol = ListenerProtocol(row.protocol)
    stored = {name: getattr(row, name) for name in NULL_MEANS}
    values = _overlay(data, stored)
    settings = _settings(services, protocol, values)
    if any(data.given(ref) for ref in ("default_tls_container_ref", "sni_container_refs")):
        # A PROMETHEUS listener given a certificate starts terminating TLS.
        policy.check_listener_protocol(services.settings.api, protocol, settings.offloads_tls)
    rules.check_settings(settings)
    _check_sent_tls(services, data, settings)
    if data.given("default_pool_id"):
        _check_default_pool(session, lb, protocol, None, data.default_pool_id)
    if data.given("allowed_cidrs"):
        values["allowed_cidrs"] = rules.normalise_cidrs(values["allowed_cidrs"])
        rules.check_cidrs(values["allowed_cidrs"], _vip_addresses(lb), lb.vip_sg_ids or [])
        require_allowed_cidrs(services, lb.provider, protocol, values["allowed_cidrs"])
    given = [name for name in LISTENER_OPTIONS if data.given(name)]
    require_listener_options(services, lb.provider, protocol, values, given)
    _sent_refs(services, lb, data)
    _store(row, values, settings)
    if data.given("admin_state_up"):
        row.admin_state_up = bool(data.admin_state_up)
    if data.tags is not None:
        set_tags(session, row.id, data.tags)
    row.updated_at = now
