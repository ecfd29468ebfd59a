"""Pool rows from requests: create (standalone POST and graph create) and update.

``build_pool`` validates a pool against its (already locked) load balancer and adds the
row; the standalone POST wraps it with the lock, quota and job, and the single-call load
balancer create calls it as it is. ``update_pool`` applies a PUT body to a locked row.
"""

from __future__ import annotations

from datetime import datetime

from lbaas.api.builders.common import add_new_row, apply_sent, new_object_columns
from lbaas.api.capabilities import (
    require_algorithm_for_protocol,
    require_capability,
    require_member_down_policy,
    require_pool_tls,
)
from lbaas.api.certificates import require_pool_certificates
from lbaas.api.schemas.pool import PoolCreate, PoolSingleCreate, PoolUpdate
from lbaas.api.services import ApiServices
from lbaas.api.validation import operator_policy as policy
from lbaas.api.validation import pool as rules
from lbaas.api.validation import tls
from lbaas.db.listing import set_tags
from lbaas.db.session import Session
from lbaas.db.tables import ListenerRow, LoadBalancerRow, PoolRow
from lbaas.errors import Conflict, InvalidInput
from lbaas.model.enums import MemberDownPolicy

REF_FIELDS = ("tls_container_ref", "ca_tls_container_ref", "crl_container_ref")


def _persistence(
    services: ApiServices, provider: str, sp: rules.Persistence, protocol: str
) -> dict[str, object]:
    rules.check_session_persistence(sp, protocol)
    require_capability(
        services, provider, "session_persistence type", str(sp.type), "persistence_types"
    )
    return sp.as_dict()


def _checked_create(
    services: ApiServices,
    lb: LoadBalancerRow,
    data: PoolCreate | PoolSingleCreate,
    listener: ListenerRow | None,
) -> tuple[str, str, dict[str, object] | None]:
    """Validate a new pool; its protocol, algorithm and session persistence."""
    if data.protocol is None or data.lb_algorithm is None:
        missing = "protocol" if data.protocol is None else "lb_algorithm"
        raise InvalidInput(
            f"Pool definition for '{data.name or ''}' missing required attribute: {missing}"
        )
    protocol = data.protocol.value
    require_capability(services, lb.provider, "protocol", data.protocol, "pool_protocols")
    require_capability(services, lb.provider, "lb_algorithm", data.lb_algorithm, "lb_algorithms")
    require_algorithm_for_protocol(services, lb.provider, protocol, data.lb_algorithm.value)
    persistence = None
    if data.session_persistence is not None:
        sp = data.session_persistence
        wanted = rules.Persistence(
            sp.type.value, sp.cookie_name, sp.persistence_timeout, sp.persistence_granularity
        )
        persistence = _persistence(services, lb.provider, wanted, protocol)
    require_pool_tls(services, lb.provider, protocol, bool(data.tls_enabled))
    policy_down = data.lbaas_member_down_policy or MemberDownPolicy.KEEP
    require_member_down_policy(services, lb.provider, protocol, policy_down)
    rules.check_tls_refs_on_create(
        rules.TlsRefs(data.tls_container_ref, data.ca_tls_container_ref, data.crl_container_ref)
    )
    require_pool_certificates(
        services,
        lb.project_id,
        data.tls_container_ref,
        data.ca_tls_container_ref,
        data.crl_container_ref,
    )
    rules.check_tls_versions(data.tls_versions)
    rules.check_alpn_protocols(data.alpn_protocols)
    policy.check_ciphers(services.settings.api, data.tls_ciphers)
    policy.check_versions(services.settings.api, data.tls_versions)
    if listener is not None:
        rules.check_listener_pool_protocols(listener.protocol, protocol)
        if listener.default_pool_id is not None:
            raise Conflict("This listener already has a default pool")
    return protocol, data.lb_algorithm.value, persistence


def build_pool(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    data: PoolCreate | PoolSingleCreate,
    now: datetime,
    *,
    listener: ListenerRow | None = None,
) -> PoolRow:
    """Validate a new pool of a locked load balancer and add it (PENDING_CREATE, OFFLINE).

    With ``listener`` the pool becomes that listener's default pool (protocols must fit,
    and the listener must not have one). No lock, quota, job or notification here.
    """
    protocol, algorithm, persistence = _checked_create(services, lb, data, listener)
    row = PoolRow(
        **new_object_columns(lb.project_id, now, data=data),
        loadbalancer_id=lb.id,
        name=data.name,
        description=data.description,
        admin_state_up=data.admin_state_up,
        protocol=protocol,
        lb_algorithm=algorithm,
        session_persistence=persistence,
        tls_enabled=data.tls_enabled,
        tls_container_ref=data.tls_container_ref,
        ca_tls_container_ref=data.ca_tls_container_ref,
        crl_container_ref=data.crl_container_ref,
        tls_ciphers=data.tls_ciphers,
        tls_versions=data.tls_versions,
        alpn_protocols=data.alpn_protocols,
        member_down_policy=(data.lbaas_member_down_policy or MemberDownPolicy.KEEP).value,
    )
    if data.tls_enabled:
        _fill_tls_defaults(services, row)
    add_new_row(session, row, data.tags)
    if listener is not None:
        listener.default_pool_id = row.id
    return row


def _fill_tls_defaults(services: ApiServices, row: PoolRow) -> None:
    defaults = tls.pool_defaults(services.settings.api)
    if row.tls_ciphers is None:
        row.tls_ciphers = defaults.ciphers
    if row.tls_versions is None:
        row.tls_versions = list(defaults.versions)
    if row.alpn_protocols is None:
        row.alpn_protocols = list(defaults.alpn_protocols)


def _update_persistence(
    services: ApiServices, provider: str, row: PoolRow, data: PoolUpdate
) -> None:
    sp = data.session_persistence
    if sp is None or not sp.model_fields_set:
        row.session_persistence = None  # null or {} removes persistence
        return
    stored = row.session_persistence or {}
    kind = sp.type.value if sp.type is not None else stored.get("type")
    if kind is None:
        raise InvalidInput(
            "Invalid input for field/attribute type. Value: 'None'. Mandatory field missing."
        )
    wanted = rules.Persistence(
        str(kind), sp.cookie_name, sp.persistence_timeout, sp.persistence_granularity
    )
    row.session_persistence = _persistence(services, provider, wanted, row.protocol)


def _update_tls(services: ApiServices, project_id: str, row: PoolRow, data: PoolUpdate) -> None:
    sent = {name: getattr(data, name) for name in REF_FIELDS if data.given(name)}
    stored = rules.TlsRefs(row.tls_container_ref, row.ca_tls_container_ref, row.crl_container_ref)
    rules.check_tls_refs_on_update(stored, sent)
    require_pool_certificates(services, project_id, *(sent.get(name) for name in REF_FIELDS))
    for name, value in sent.items():
        setattr(row, name, value)
    if data.given("tls_enabled"):
        row.tls_enabled = bool(data.tls_enabled)
    if data.given("tls_versions"):
        rules.check_tls_versions(data.tls_versions)
        policy.check_versions(services.settings.api, data.tls_versions)
        row.tls_versions = list(data.tls_versions) if data.tls_versions is not None else None
    if data.given("alpn_protocols"):
        rules.check_alpn_protocols(data.alpn_protocols)
        protocols = data.alpn_protocols
        row.alpn_protocols = list(protocols) if protocols is not None else None
    if data.given("tls_ciphers"):
        policy.check_ciphers(services.settings.api, data.tls_ciphers)
        row.tls_ciphers = data.tls_ciphers
    if row.tls_enabled:
        _fill_tls_defaults(services, row)  # null means the default for a re-encrypting pool


def apply_pool_update(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    row: PoolRow,
    data: PoolUpdate,
) -> None:
    """Apply a PUT body's pool to a locked pool row."""
    if data.given("tags") and data.tags is not None:
        set_tags(session, row.id, data.tags)
    apply_sent(row, data, ("name", "description"))
    if data.given("lb_algorithm"):
        if data.lb_algorithm is None:
            raise InvalidInput("None is not a valid option for lb_algorithm")
        require_capability(
            services, lb.provider, "lb_algorithm", data.lb_algorithm, "lb_algorithms"
        )
        require_algorithm_for_protocol(services, lb.provider, row.protocol, data.lb_algorithm.value)
        row.lb_algorithm = data.lb_algorithm.value
    if data.given("session_persistence"):
        _update_persistence(services, lb.provider, row, data)
    if data.given("tls_enabled"):
        require_pool_tls(services, lb.provider, row.protocol, bool(data.tls_enabled))
    if data.given("lbaas_member_down_policy"):
        wanted = data.lbaas_member_down_policy or MemberDownPolicy.KEEP  # null: the default
        require_member_down_policy(services, lb.provider, row.protocol, wanted)
        row.member_down_policy = wanted.value
    _update_tls(services, lb.project_id, row, data)
