"""Load balancer rows from requests: the create checks, the VIP and the row itself."""

from __future__ import annotations

import json
from datetime import datetime

from lbaas.api.builders import graph_create
from lbaas.api.builders.common import add_new_row, apply_sent, new_object_columns
from lbaas.api.capabilities import require_additional_vips, require_vip_sg_enforced
from lbaas.api.lookups import NIL_UUID
from lbaas.api.quota import check_quota
from lbaas.api.schemas.loadbalancer import LoadBalancerCreate, LoadBalancerUpdate
from lbaas.api.services import ApiServices
from lbaas.db.listing import set_tags
from lbaas.db.loadbalancers import loadbalancer_repo
from lbaas.db.session import Session
from lbaas.db.tables import (
    AvailabilityZoneProfileRow,
    AvailabilityZoneRow,
    FlavorProfileRow,
    FlavorRow,
    ListenerRow,
    LoadBalancerRow,
)
from lbaas.errors import InvalidInput, ValidationFailure
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize
from lbaas.model.enums import ListenerProtocol
from lbaas.network.allocation import VipRequest, allocate_vip
from lbaas.network.security_groups import EMBEDDED


def authorized_project(ctx: RequestContext, data: LoadBalancerCreate) -> str:
    """The project a new load balancer belongs to (400 if none), after the checks of the
    request that need no database: 403 unless the caller may write there, 400 for a QoS
    policy."""
    project = data.project_id or data.tenant_id or ctx.project_id
    if project is None:
        raise ValidationFailure(
            "Missing project ID in request where one is required. An administrator should "
            "check the keystone settings in the Octavia configuration."
        )
    authorize(ctx, Rule.WRITE, project)
    reject_unsupported_vip_options(data.vip_qos_policy_id)
    return project


VIP_QOS_REFUSAL = (
    "vip_qos_policy_id is not supported: lbaas enforces no QoS policies (no data plane "
    "rate-limits a VIP), so a policy would be accepted and never applied. Leave "
    "vip_qos_policy_id out (or null); to bound a listener's load, set its connection_limit."
)
"""Why a VIP QoS policy is refused and what to do instead (docs/api-compat.md)."""


def reject_unsupported_vip_options(qos_policy_id: str | None) -> None:
    if qos_policy_id is not None:
        raise InvalidInput(VIP_QOS_REFUSAL)


def vip_security_groups(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    sent: list[str] | None,
    listeners: list[ListenerRow],
) -> list[str]:
    """The groups a VIP is to use (null is none), after Octavia's checks and lbaas's:
    each group exists in the project (400), no listener has allowed_cidrs (400, as
    Octavia's api-ref says), and the provider enforces groups on every listener (400)."""
    groups = list(dict.fromkeys(sent or []))
    if not groups:
        return []
    EMBEDDED.require_usable(session, lb.project_id, groups)
    if any(li.allowed_cidrs for li in listeners):
        raise ValidationFailure(
            "vip_sg_ids cannot be set on a load balancer whose listeners have allowed_cidrs."
        )
    protocols = [ListenerProtocol(li.protocol) for li in listeners]
    require_vip_sg_enforced(services, lb.provider, protocols)
    return groups


def _resolve_provider(
    session: Session, services: ApiServices, requested: str | None, flavor_id: str | None
) -> str:
    provider = requested
    if flavor_id is not None:
        flavor = session.get(FlavorRow, flavor_id)
        if flavor is None or flavor_id == NIL_UUID:
            raise ValidationFailure("Invalid flavor_id.")
        if not flavor.enabled:
            raise InvalidInput(
                f"The selected flavor is not allowed in this deployment: {flavor_id}"
            )
        profile = session.get(FlavorProfileRow, flavor.flavor_profile_id)
        flavor_provider = profile.provider_name if profile is not None else None
        if (
            provider is not None
            and flavor_provider is not None
            and services.providers.resolve(provider) != services.providers.resolve(flavor_provider)
        ):
            raise InvalidInput(f"Flavor '{flavor_id}' is not compatible with provider '{provider}'")
        provider = provider or flavor_provider
    provider = provider or services.providers.default
    canonical = services.providers.resolve(provider)
    if canonical is None:
        raise InvalidInput(f"Provider '{provider}' is not enabled.")
    return canonical


def _topology(session: Session, services: ApiServices, provider: str, flavor_id: str | None) -> str:
    """The flavor's ``loadbalancer_topology``, else the configured default, as Octavia.

    A topology the provider cannot build here (ACTIVE_STANDBY with loopback agents) is a
    400, also when it comes from the configured default or an older flavor.
    """
    key = "loadbalancer_topology"
    chosen: str = services.settings.providers.loadbalancer_topology
    flavor = session.get(FlavorRow, flavor_id) if flavor_id is not None else None
    profile = session.get(FlavorProfileRow, flavor.flavor_profile_id) if flavor else None
    if profile is not None:
        data = json.loads(profile.flavor_data or "{}")
        if isinstance(data, dict) and isinstance(data.get(key), str):
            chosen = data[key]
    capabilities = services.providers.capabilities(provider)
    allowed = capabilities.profile_values.get(key)
    if allowed is not None and chosen not in allowed:
        note = capabilities.profile_value_notes.get(key, "not honoured yet")
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: {key}={chosen!r} ({note})"
        )
    return chosen


def _check_availability_zone(session: Session, name: str | None) -> None:
    if name is None:
        return
    zone = session.get(AvailabilityZoneRow, name)
    if zone is None:
        raise ValidationFailure("Invalid availability zone.")
    if not zone.enabled:
        raise InvalidInput(
            f"The selected availability_zone is not allowed in this deployment: {name}"
        )


def _zone_vip_networks(session: Session, name: str | None) -> list[str] | None:
    """The ``valid_vip_networks`` of the named zone's profile (lower case), if it sets any."""
    zone = None if name is None else session.get(AvailabilityZoneRow, name)
    profile = (
        None
        if zone is None
        else session.get(AvailabilityZoneProfileRow, zone.availability_zone_profile_id)
    )
    data = {} if profile is None else json.loads(profile.availability_zone_data or "{}")
    networks = data.get("valid_vip_networks") if isinstance(data, dict) else None
    if not isinstance(networks, list) or not networks:
        return None
    return [str(n).lower() for n in networks]


def _check_vip_network(session: Session, zone: str | None, network_id: str | None) -> None:
    """Octavia's rule: in a zone whose profile lists ``valid_vip_networks``, the VIP must be
    on one of them (the same 400 as its deployment-wide ``valid_vip_networks``)."""
    allowed = _zone_vip_networks(session, zone)
    if allowed is not None and (network_id or "").lower() not in allowed:
        raise ValidationFailure(
            "Supplied VIP network_id is not allowed by the configuration of this deployment."
        )


def build_loadbalancer(
    session: Session,
    services: ApiServices,
    project: str,
    data: LoadBalancerCreate,
    now: datetime,
) -> LoadBalancerRow:
    """Validate a new load balancer, allocate its VIPs and add it (PENDING_CREATE)."""
    provider = _resolve_provider(session, services, data.provider, data.flavor_id)
    require_additional_vips(services, provider, len(data.additional_vips or []))
    _check_availability_zone(session, data.availability_zone)
    check_quota(session, services.settings.quota, project, "loadbalancer")
    row = LoadBalancerRow(
        **new_object_columns(project, now, data=data),
        name=data.name,
        description=data.description,
        admin_state_up=data.admin_state_up,
        provider=provider,
        topology=_topology(session, services, provider, data.flavor_id),
        flavor_id=data.flavor_id,
        availability_zone=data.availability_zone,
        vip_sg_ids=[],
        additional_vips=[],
    )
    # Before the children: a listener created with the load balancer is checked against
    # its groups (``create_listener``).
    row.vip_sg_ids = vip_security_groups(session, services, row, data.vip_sg_ids, [])
    vip = allocate_vip(
        session,
        VipRequest(data.vip_port_id, data.vip_network_id, data.vip_subnet_id, data.vip_address),
        row.id,
        now,
    )
    row.vip_address, row.vip_subnet_id = vip.address, vip.subnet_id
    row.vip_network_id, row.vip_port_id = vip.network_id, vip.port_id
    _check_vip_network(session, data.availability_zone, vip.network_id)
    row.additional_vips = graph_create.allocate_additional_vips(
        session, data.additional_vips or [], vip, row.id, now
    )
    return add_new_row(session, row, data.tags)


def apply_loadbalancer_update(
    session: Session, services: ApiServices, row: LoadBalancerRow, data: LoadBalancerUpdate
) -> None:
    """Apply a PUT body to a locked load balancer row."""
    apply_sent(row, data, ("name", "description"))
    if data.given("vip_qos_policy_id"):
        row.vip_qos_policy_id = None
    if data.given("vip_sg_ids"):
        listeners = loadbalancer_repo.live_listeners(session, row.id)
        row.vip_sg_ids = vip_security_groups(session, services, row, data.vip_sg_ids, listeners)
    if data.given("tags") and data.tags is not None:
        set_tags(session, row.id, data.tags)
