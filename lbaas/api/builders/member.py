"""Member rows from requests: create (POST, batch and graph create), update and replace.

``build_member`` is the validated row constructor shared by the member POST, the batch
update and the single-call load balancer create; ``update_member`` applies a PUT body and
``replace_member`` a batch item naming an existing member.
"""

from __future__ import annotations

import ipaddress
import json
from datetime import datetime

from lbaas.api.builders.common import add_new_row, apply_sent, new_object_columns
from lbaas.api.capabilities import require_datagram_ip_version
from lbaas.api.lookups import has_live_monitor
from lbaas.api.quota import check_quota
from lbaas.api.schemas.member import (
    DEFAULT_WEIGHT,
    MemberCreate,
    MembersBatchBody,
    MemberSingleCreate,
    MemberUpdate,
)
from lbaas.api.services import ApiServices
from lbaas.api.writes import TreeWrite
from lbaas.db import table_rows
from lbaas.db.listing import set_tags
from lbaas.db.loadbalancers import pool_repo
from lbaas.db.network import network_repo
from lbaas.db.session import Session
from lbaas.db.tables import FlavorProfileRow, FlavorRow, LoadBalancerRow, MemberRow, PoolRow
from lbaas.errors import Conflict, InvalidInput, ValidationFailure
from lbaas.model.enums import OperatingStatus

_NORMAL, _DIRECT = "normal", "direct"  # vnic types: a plain port, an SR-IOV port


def _check_address(services: ApiServices, address: str) -> None:
    wanted = ipaddress.ip_address(address)
    reserved = services.settings.network.reserved_member_addresses
    if any(ipaddress.ip_address(r) == wanted for r in reserved):
        raise InvalidInput(f"{address} is not a valid option for member address")


def check_subnet(session: Session, subnet_id: str | None) -> None:
    if subnet_id is not None and network_repo.get_subnet(session, subnet_id) is None:
        raise InvalidInput(f"Subnet {subnet_id} not found.")


def _flavor_allows_sriov(session: Session, lb: LoadBalancerRow | None) -> bool:
    flavor = session.get(FlavorRow, lb.flavor_id) if lb is not None and lb.flavor_id else None
    profile = session.get(FlavorProfileRow, flavor.flavor_profile_id) if flavor else None
    if profile is None:
        return False
    try:
        data = json.loads(profile.flavor_data)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("allow_member_sriov") is True


def _check_unique(session: Session, pool_id: str, address: str, port: int) -> None:
    if table_rows.count_rows(
        session,
        MemberRow,
        MemberRow.pool_id == pool_id,
        MemberRow.address == address,
        MemberRow.protocol_port == port,
    ):
        raise Conflict(
            f"Another member on this pool is already using ip {address} on protocol_port {port}"
        )


def build_member(
    session: Session,
    services: ApiServices,
    pool: PoolRow,
    data: MemberSingleCreate,
    now: datetime,
    *,
    has_monitor: bool,
    known_unique: bool = False,
) -> MemberRow:
    """Validate a new member of ``pool`` and add it (PENDING_CREATE).

    It starts OFFLINE when the pool has a health monitor, else NO_MONITOR. No lock,
    quota, job or notification here. ``known_unique``: the caller has already compared
    the address and port with the pool's members (a batch does it once for all of them,
    instead of one query — and one autoflush — per member).
    """
    _check_address(services, data.address)
    check_subnet(session, data.subnet_id)
    lb = session.get(LoadBalancerRow, pool.loadbalancer_id)
    if lb is not None:
        require_datagram_ip_version(services, lb.provider, pool.protocol, data.address, "member")
    vnic_type = _NORMAL
    if data.request_sriov:
        if not _flavor_allows_sriov(session, session.get(LoadBalancerRow, pool.loadbalancer_id)):
            raise ValidationFailure("The load balancer flavor does not allow SR-IOV member ports.")
        vnic_type = _DIRECT
    if not known_unique:
        _check_unique(session, pool.id, data.address, data.protocol_port)
    status = OperatingStatus.OFFLINE if has_monitor else OperatingStatus.NO_MONITOR
    row = MemberRow(
        **new_object_columns(pool.project_id, now, status, data),
        pool_id=pool.id,
        name=data.name,
        admin_state_up=data.admin_state_up,
        address=data.address,
        protocol_port=data.protocol_port,
        weight=data.weight,
        backup=data.backup,
        subnet_id=data.subnet_id,
        monitor_address=data.monitor_address,
        monitor_port=data.monitor_port,
        vnic_type=vnic_type,
    )
    return add_new_row(session, row, data.tags, flush=False)


def apply_member_update(session: Session, row: MemberRow, data: MemberUpdate) -> None:
    """Apply a PUT body to a locked member row."""
    apply_sent(row, data, ("name", "monitor_address", "monitor_port"))
    if data.given("weight"):
        row.weight = DEFAULT_WEIGHT if data.weight is None else data.weight
    if data.given("backup"):
        row.backup = bool(data.backup)
    if data.given("tags") and data.tags is not None:
        set_tags(session, row.id, data.tags)


def replace_member(session: Session, row: MemberRow, item: MemberCreate) -> None:
    """A member named again in a batch: omitted fields take their POST defaults."""
    row.weight = item.weight
    row.admin_state_up = item.admin_state_up
    row.backup = item.backup
    row.monitor_address = item.monitor_address
    row.monitor_port = item.monitor_port
    if item.given("name"):
        row.name = item.name
    if item.given("subnet_id"):
        row.subnet_id = item.subnet_id
    if item.given("tags") and item.tags is not None:
        set_tags(session, row.id, item.tags)


def apply_batch(
    w: TreeWrite, services: ApiServices, pool: PoolRow, body: MembersBatchBody, additive: bool
) -> None:
    """Make the pool's members what a batch update names: unknown ones created, known ones
    replaced, and (unless ``additive``) those not named deleted. No job when nothing changes."""
    lb, listeners = w.lock_pool(pool)
    existing = {
        (m.address, m.protocol_port): m for m in pool_repo.members_of_pool(w.session, pool.id)
    }
    keyed = [((m.address, m.protocol_port), m) for m in body.members]
    new = [m for key, m in keyed if key not in existing]
    kept = [(existing[key], m) for key, m in keyed if key in existing]
    wanted = {key for key, _ in keyed}
    gone = [] if additive else [row for key, row in existing.items() if key not in wanted]
    if not (new or kept or gone):
        return
    check_quota(w.session, services.settings.quota, pool.project_id, "member", len(new) - len(gone))
    monitored = has_live_monitor(w.session, pool.id)
    for item in new:
        build_member(
            w.session, services, pool, item, w.now, has_monitor=monitored, known_unique=True
        )
    for row, item in kept:
        replace_member(w.session, row, item)
    w.changed(lb, update=[*listeners, pool, *(row for row, _ in kept)], delete=gone)
