"""Small read and lock queries the API needs, kept here so it never writes SQL itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from lbaas.db.tables import Base, LoadBalancerRow


def lock_loadbalancer(session: Session, loadbalancer_id: str) -> LoadBalancerRow | None:
    """The load balancer row, locked for the rest of the transaction (the 409 test-and-set)."""
    row = session.get(
        LoadBalancerRow, loadbalancer_id, with_for_update=True, populate_existing=True
    )
    if row is None or row.provisioning_status == "DELETED":
        return None
    return row


def get_row(session: Session, table: type[Base], ident: str) -> Any:
    return session.get(table, ident)


def children_ids(
    session: Session,
    id_column: InstrumentedAttribute[Any],
    parent_column: InstrumentedAttribute[Any],
    parent_ids: Sequence[str],
    *conditions: Any,
) -> dict[str, list[str]]:
    """Ids of children grouped by parent id, in one query (for the ``[{"id"}]`` lists)."""
    out: dict[str, list[str]] = {p: [] for p in parent_ids}
    if not parent_ids:
        return out
    stmt = select(parent_column, id_column).where(parent_column.in_(list(parent_ids)), *conditions)
    for parent, child in session.execute(stmt):
        out[parent].append(child)
    return out


def find_rows(session: Session, table: type[Base], *conditions: Any) -> list[Any]:
    return list(session.scalars(select(table).where(*conditions)))


def count_rows(session: Session, table: type[Base], *conditions: Any) -> int:
    return int(session.scalar(select(func.count()).select_from(table).where(*conditions)) or 0)


def ensure_quota_record(session: Session, project_id: str) -> None:
    """Create the project's (all-default) quota record the first time it creates anything."""
    from sqlalchemy.exc import IntegrityError

    from lbaas.db.tables import QuotaRow

    if session.get(QuotaRow, project_id) is not None:
        return
    try:
        with session.begin_nested():
            session.add(QuotaRow(project_id=project_id))
    except IntegrityError:
        pass  # another request created it first: exactly what we wanted
