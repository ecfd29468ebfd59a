"""The get-or-404 lookups every resource shares: a row that is gone is not found.

Each lookup answers 404 (with Octavia's name for the kind) when the row does not exist
or is DELETED, and then, where a ``rule`` is given, 403 unless the caller may apply it to
the row's project. The order (404 before 403) is Octavia's, and the tests assert it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from lbaas.db import table_rows
from lbaas.db.session import Session
from lbaas.db.tables import (
    Base,
    HealthMonitorRow,
    L7PolicyRow,
    ListenerRow,
    LoadBalancerRow,
    PoolRow,
)
from lbaas.errors import NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, authorize
from lbaas.model.enums import ProvisioningStatus

RowT = TypeVar("RowT", bound=Base)
DELETED = ProvisioningStatus.DELETED.value
# The id the reference reserves for "no flavor/zone": never found, whatever is stored.
NIL_UUID = "00000000-0000-0000-0000-000000000000"
PENDING_DELETE = ProvisioningStatus.PENDING_DELETE.value


def find_live(session: Session, table: type[RowT], row_id: str, kind: str) -> RowT:
    """The row of ``table`` with id ``row_id`` unless it is missing or DELETED (404)."""
    row: Any = session.get(table, row_id)
    if row is None or row.provisioning_status == DELETED:
        raise NotFound.of(kind, row_id)
    found: RowT = row
    return found


def get_catalog_row(
    session: Session, table: type[RowT], kind: str, key: str, *, lock: bool = False
) -> RowT:
    """A flavor, zone or profile by its key, or 404: catalog rows have no status, and
    ``NIL_UUID`` is never found."""
    row = None if key == NIL_UUID else session.get(table, key, with_for_update=lock)
    if row is None:
        raise NotFound.of(kind, key)
    return row


def get_visible(
    session: Session, ctx: RequestContext, table: type[RowT], row_id: str, kind: str, rule: Rule
) -> RowT:
    """``find_live``, then 403 unless the caller passes ``rule`` on the row's project."""
    row = find_live(session, table, row_id, kind)
    authorize(ctx, rule, getattr(row, "project_id"))  # noqa: B009 - every tree row has one
    return row


def get_loadbalancer(
    session: Session, ctx: RequestContext, lb_id: str, rule: Rule
) -> LoadBalancerRow:
    return get_visible(session, ctx, LoadBalancerRow, lb_id, "Load Balancer", rule)


def get_listener(
    session: Session, ctx: RequestContext, listener_id: str, rule: Rule
) -> ListenerRow:
    return get_visible(session, ctx, ListenerRow, listener_id, "Listener", rule)


def find_pool(session: Session, pool_id: str) -> PoolRow:
    """The visible pool or 404 (no authorisation: callers authorise on its project)."""
    return find_live(session, PoolRow, pool_id, "Pool")


def get_pool(session: Session, ctx: RequestContext, pool_id: str, rule: Rule) -> PoolRow:
    return get_visible(session, ctx, PoolRow, pool_id, "Pool", rule)


def get_l7policy(
    session: Session, ctx: RequestContext, policy_id: str, rule: Rule, kind: str = "L7 Policy"
) -> L7PolicyRow:
    """The visible policy (``kind`` names it in the 404 message); then 403."""
    return get_visible(session, ctx, L7PolicyRow, policy_id, kind, rule)


def has_live_monitor(session: Session, pool_id: str) -> bool:
    """Whether new members start OFFLINE (monitored) rather than NO_MONITOR."""
    monitors = table_rows.find_rows(session, HealthMonitorRow, HealthMonitorRow.pool_id == pool_id)
    return any(hm.provisioning_status not in (PENDING_DELETE, DELETED) for hm in monitors)
