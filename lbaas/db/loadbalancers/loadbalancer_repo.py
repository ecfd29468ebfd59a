"""Load balancer rows: the locked read behind every write, the children a view lists,
counts of live ones, and which ones a provider carries.

The API's writes lock the load balancer first (the 409 test-and-set); its views list
listener and pool ids and tags of a whole page in one round trip. Providers whose health
is polled ask which of their load balancers are ACTIVE, and whether one is still kept.
``/metrics`` reads the certificate references of the listeners that serve certificates.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import literal, select, union_all
from sqlalchemy.orm import Session

from lbaas.db.engine import Database
from lbaas.db.table_rows import count_rows, id_set_value, in_id_set
from lbaas.db.tables import ListenerRow, LoadBalancerRow, PoolRow, TagRow
from lbaas.model.enums import ProvisioningStatus, is_live


def lock_loadbalancer(session: Session, loadbalancer_id: str) -> LoadBalancerRow | None:
    """The load balancer row, locked for the rest of the transaction (the 409 test-and-set)."""
    row = session.get(
        LoadBalancerRow, loadbalancer_id, with_for_update=True, populate_existing=True
    )
    if row is None or row.provisioning_status == ProvisioningStatus.DELETED:
        return None
    return row


@dataclass(frozen=True)
class LoadBalancerChildren:
    """What a load balancer's view lists besides its own columns, per load balancer id."""

    listeners: dict[str, list[str]]
    pools: dict[str, list[str]]
    tags: dict[str, list[str]]


# Provisioning statuses of objects that exist for the API (everything but DELETED).
LIVE_STATUSES = tuple(s.value for s in ProvisioningStatus if s is not ProvisioningStatus.DELETED)


@functools.cache
def live_listeners(session: Session, loadbalancer_id: str) -> list[ListenerRow]:
    """The load balancer's listeners that are not being deleted."""
    query = select(ListenerRow).where(ListenerRow.loadbalancer_id == loadbalancer_id)
    return [li for li in session.scalars(query) if is_live(li.provisioning_status)]


def _loadbalancer_children_query(dialect: str) -> Any:
    listeners, pools, tags = ListenerRow.__table__.c, PoolRow.__table__.c, TagRow.__table__.c
    return union_all(
        select(literal("l"), listeners.loadbalancer_id, listeners.id).where(
            in_id_set(listeners.loadbalancer_id, dialect),
            listeners.provisioning_status.in_(LIVE_STATUSES),
        ),
        select(literal("p"), pools.loadbalancer_id, pools.id).where(
            in_id_set(pools.loadbalancer_id, dialect), pools.provisioning_status.in_(LIVE_STATUSES)
        ),
        select(literal("t"), tags.resource_id, tags.tag).where(
            in_id_set(tags.resource_id, dialect)
        ),
    )


def loadbalancer_children(session: Session, lb_ids: Sequence[str]) -> LoadBalancerChildren:
    """Listener ids, pool ids and tags of many load balancers in one round trip."""
    out = LoadBalancerChildren(
        {i: [] for i in lb_ids}, {i: [] for i in lb_ids}, {i: [] for i in lb_ids}
    )
    if not lb_ids:
        return out
    by_kind = {"l": out.listeners, "p": out.pools, "t": out.tags}
    conn = session.connection()
    dialect = conn.dialect.name
    rows = conn.execute(
        _loadbalancer_children_query(dialect), {"id_set": id_set_value(dialect, lb_ids)}
    )
    for kind, parent, value in rows:
        by_kind[kind][parent].append(value)
    for tags in out.tags.values():
        tags.sort()
    return out


def count_live_loadbalancers(session: Session, **where: str) -> int:
    """How many load balancers that are not DELETED have the given column values (the
    flavor or zone that is in use cannot be deleted)."""
    conditions = [getattr(LoadBalancerRow, column) == value for column, value in where.items()]
    return count_rows(
        session,
        LoadBalancerRow,
        *conditions,
        LoadBalancerRow.provisioning_status != ProvisioningStatus.DELETED.value,
    )


def active_loadbalancers_of(database: Database, provider: str) -> list[str]:
    """Ids of ``provider``'s load balancers that are ACTIVE (settled, not being deleted)."""
    stmt = (
        select(LoadBalancerRow.id)
        .where(
            LoadBalancerRow.provider == provider,
            LoadBalancerRow.provisioning_status == ProvisioningStatus.ACTIVE.value,
        )
        .order_by(LoadBalancerRow.id)
    )
    with database.read_connection() as conn:
        return [str(row) for row in conn.execute(stmt).scalars()]


def loadbalancer_kept(database: Database, loadbalancer_id: str) -> bool:
    """Whether the load balancer exists and is neither being deleted nor deleted."""
    gone = (ProvisioningStatus.PENDING_DELETE.value, ProvisioningStatus.DELETED.value)
    stmt = select(LoadBalancerRow.provisioning_status).where(LoadBalancerRow.id == loadbalancer_id)
    with database.read_connection() as conn:
        status = conn.execute(stmt).scalar_one_or_none()
    return status is not None and status not in gone


def listener_certificate_refs(
    database: Database, protocols: Sequence[str]
) -> list[tuple[str, str, str, str | None, list[str]]]:
    """(listener id, load balancer id, project id, default certificate reference, SNI
    references) of every listener of ``protocols``."""
    query = select(
        ListenerRow.id,
        ListenerRow.loadbalancer_id,
        ListenerRow.project_id,
        ListenerRow.default_tls_container_ref,
        ListenerRow.sni_container_refs,
    ).where(ListenerRow.protocol.in_(protocols))
    with database.read_connection() as conn:
        return list(conn.execute(query).tuples())
