"""The hosts registry: enrolled agents, their liveness, and the load placement reads.

Enrolment writes a row; host heartbeats (through the health manager) keep it UP and
carry the agent's address, zone and capacity; a host silent past the health manager's
``host_stale_after`` is marked DOWN. The load of a host is the number of live amphorae
whose ``compute_id`` names it, counted inside the placing transaction so that
concurrent placements see each other (SQLite has one writer; on PostgreSQL the zone's
host rows are locked).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from lbaas.db.amphorae.amphora_reports import apply_host_report
from lbaas.db.amphorae.pair_repair import queue_half_pairs
from lbaas.db.tables import AmphoraRow, HostRow
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, AmphoraStatus, HostStatus
from lbaas.model.fleet import HostAddress, HostAnnouncement, HostLoad, HostView, SilentHost

_LIVE = [status.value for status in LIVE_AMPHORA_STATUSES]


def enrol(
    session: Session,
    where: HostAddress,
    *,
    zone: str,
    capacity: int,
    now: datetime,
    up_at: float | None = None,
) -> None:
    """Create or update the host's row; ``up_at`` (a time) marks it UP as of then."""
    row = session.get(HostRow, where.host_id, with_for_update=True)
    if row is None:
        row = HostRow(id=where.host_id, enrolled_at=now, reported_amphorae=[])
        row.status = HostStatus.DOWN
        session.add(row)
    row.address, row.port, row.zone, row.capacity = where.address, where.port, zone, capacity
    if up_at is not None:
        row.status = HostStatus.UP
        row.last_heartbeat_at = max(row.last_heartbeat_at or 0.0, up_at)
    session.flush()


def any_host(session: Session) -> bool:
    return session.scalars(select(HostRow.id).limit(1)).first() is not None


def _loads(session: Session) -> dict[str, int]:
    rows = session.execute(
        select(AmphoraRow.compute_id, func.count())
        .where(AmphoraRow.compute_id.is_not(None), AmphoraRow.status.in_(_LIVE))
        .group_by(AmphoraRow.compute_id)
    )
    return {str(host_id): int(count) for host_id, count in rows}


def _address(row: HostRow) -> HostAddress:
    return HostAddress(row.id, row.address, row.port)


def live_host_loads(session: Session, zone: str | None) -> list[HostLoad]:
    """The UP hosts (of ``zone`` if given) with their live amphorae; rows locked."""
    query = select(HostRow).where(HostRow.status == HostStatus.UP.value)
    if zone is not None:
        query = query.where(HostRow.zone == zone)
    rows = list(session.scalars(query.order_by(HostRow.id).with_for_update()))
    loads = _loads(session)
    return [HostLoad(_address(r), r.zone, r.capacity, loads.get(r.id, 0)) for r in rows]


def up_hosts(session: Session) -> list[HostAddress]:
    """Where the agents of the UP hosts are, in host id order."""
    rows = session.scalars(
        select(HostRow).where(HostRow.status == HostStatus.UP.value).order_by(HostRow.id)
    )
    return [_address(r) for r in rows]


def host_of(session: Session, host_id: str) -> tuple[HostAddress, HostStatus] | None:
    row = session.get(HostRow, host_id)
    return None if row is None else (_address(row), HostStatus(row.status))


def heard_at(session: Session, host_id: str) -> float | None:
    """When the host's last heartbeat was accepted; None if never (or not enrolled)."""
    row = session.get(HostRow, host_id)
    return None if row is None else row.last_heartbeat_at


def zones(session: Session, host_ids: Iterable[str | None]) -> dict[str, str]:
    """The availability zone of each named host that is enrolled."""
    wanted = sorted({h for h in host_ids if h is not None})
    if not wanted:
        return {}
    rows = session.execute(select(HostRow.id, HostRow.zone).where(HostRow.id.in_(wanted)))
    return {str(host_id): str(zone) for host_id, zone in rows}


def list_hosts(session: Session) -> list[HostView]:
    loads = _loads(session)
    return [
        HostView(
            host_id=r.id,
            address=r.address,
            port=r.port,
            zone=r.zone,
            capacity=r.capacity,
            status=HostStatus(r.status),
            amphorae=loads.get(r.id, 0),
            last_heartbeat_at=r.last_heartbeat_at,
            enrolled_at=r.enrolled_at.isoformat(),
        )
        for r in session.scalars(select(HostRow).order_by(HostRow.id))
    ]


def record_heartbeat(
    session: Session, seen: HostAnnouncement, epoch: int, sequence: int, at: float
) -> frozenset[str] | None:
    """Apply a host heartbeat newer than any accepted before; None if unknown or older,
    else the amphorae the host runs that are not live on it (retired while it was away,
    or moved): the cleaner's work (``misplaced_amphorae`` has the exact rule)."""
    row = session.get(HostRow, seen.host_id, with_for_update=True)
    if row is None:
        return None
    if row.heartbeat_epoch is not None and (epoch, sequence) <= (
        row.heartbeat_epoch,
        row.heartbeat_sequence or 0,
    ):
        return None
    row.heartbeat_epoch, row.heartbeat_sequence = epoch, sequence
    if seen.address:  # an agent bound to a wildcard announces none: keep the enrolled one
        row.address = seen.address
    row.port, row.zone, row.capacity = seen.port, seen.zone, seen.capacity
    row.reported_amphorae = list(seen.amphorae)
    row.last_heartbeat_at = max(row.last_heartbeat_at or 0.0, at)
    came_up = row.status != HostStatus.UP
    row.status = HostStatus.UP
    if came_up:  # a host that can take amphorae again: complete the pairs left halved
        session.flush()
        queue_half_pairs(session, at)
    now = datetime.fromtimestamp(at, UTC).replace(tzinfo=None)
    placed = apply_host_report(session, seen.host_id, dict(seen.vrrp), seen.cert_expiration, now)
    return frozenset(seen.amphorae) - placed


def mark_silent_down(session: Session, host_ids: Iterable[str], heard_before: float) -> list[str]:
    """Mark DOWN those of ``host_ids`` still UP and last heard before ``heard_before`` (a
    heartbeat may have come since they were chosen); their ids."""
    wanted = sorted(set(host_ids))
    if not wanted:
        return []
    silent = list(
        session.scalars(
            select(HostRow.id).where(
                HostRow.id.in_(wanted),
                HostRow.status == HostStatus.UP.value,
                func.coalesce(HostRow.last_heartbeat_at, 0.0) < heard_before,
            )
        )
    )
    if silent:
        session.execute(
            update(HostRow).where(HostRow.id.in_(silent)).values(status=HostStatus.DOWN.value)
        )
    return silent


def silent_up_hosts(session: Session, heard_before: float) -> list[SilentHost]:
    """The UP hosts last heard before ``heard_before``, with when they were."""
    rows = session.execute(
        select(HostRow.id, HostRow.address, HostRow.port, HostRow.last_heartbeat_at).where(
            HostRow.status == HostStatus.UP.value,
            func.coalesce(HostRow.last_heartbeat_at, 0.0) < heard_before,
        )
    )
    return [
        SilentHost(HostAddress(host_id, address, port), heard or 0.0)
        for host_id, address, port, heard in rows
    ]


def reported_by_up_hosts(session: Session) -> list[tuple[HostAddress, list[str]]]:
    """Each UP host with the amphora ids its latest heartbeat listed."""
    rows = session.scalars(select(HostRow).where(HostRow.status == HostStatus.UP.value))
    return [(_address(r), list(r.reported_amphorae)) for r in rows]


def misplaced_amphorae(session: Session, host_id: str, reported: Iterable[str]) -> list[str]:
    """Of the amphorae ``host_id`` runs, those the controller does not place there.

    Missing rows, retired rows, and rows placed on another host. A live row with no
    ``compute_id`` (made before hosts were recorded) is left alone.
    """
    ids = sorted(set(reported))
    if not ids:
        return []
    rows = {r.id: r for r in session.scalars(select(AmphoraRow).where(AmphoraRow.id.in_(ids)))}
    misplaced = []
    for amphora_id in ids:
        row = rows.get(amphora_id)
        if row is None or row.status not in _LIVE:
            misplaced.append(amphora_id)
        elif row.compute_id is not None and row.compute_id != host_id:
            misplaced.append(amphora_id)
    return misplaced


def recent_retirements(session: Session, loadbalancer_id: str, since: datetime) -> int:
    """Amphorae of the load balancer retired (DELETED) since ``since``."""
    return int(
        session.scalar(
            select(func.count()).where(
                AmphoraRow.loadbalancer_id == loadbalancer_id,
                AmphoraRow.status == AmphoraStatus.DELETED.value,
                AmphoraRow.updated_at >= since,
            )
        )
        or 0
    )


def amphora_hosts(session: Session, amphora_ids: Sequence[str]) -> dict[str, str | None]:
    """``compute_id`` of each amphora."""
    if not amphora_ids:
        return {}
    rows = session.execute(
        select(AmphoraRow.id, AmphoraRow.compute_id).where(AmphoraRow.id.in_(list(amphora_ids)))
    )
    return {str(a): (None if c is None else str(c)) for a, c in rows}
