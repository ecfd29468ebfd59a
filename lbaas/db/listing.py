"""One query builder for every list endpoint: filters, tags, sort, marker pagination.

The API layer parses Octavia's query parameters into a ``ListQuery`` (API attribute names
already mapped to columns by the resource's ``ListSpec``); this module turns it into SQL.
Pagination is keyset-based: the marker row's sort-key values bound the next page, with
``created_at`` and ``id`` always appended as tie-breakers so pages never overlap or skip.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ColumnElement,
    DateTime,
    Integer,
    Select,
    String,
    and_,
    bindparam,
    cast,
    exists,
    false,
    inspect,
    literal_column,
    or_,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import KeyedColumnElement

from lbaas.db.tables import Base, TagRow
from lbaas.model.enums import ProvisioningStatus


@dataclass(frozen=True)
class ListSpec:
    """How a resource's API attribute names map onto its table."""

    table: type[Base]
    columns: Mapping[str, InstrumentedAttribute[Any]]
    id_column: InstrumentedAttribute[Any]
    created_column: InstrumentedAttribute[Any] | None
    tag_capable: bool = True
    # Return plain rows (attribute access by column name) instead of ORM objects: several
    # times cheaper for big pages, for views that need no relationships. Timestamps and
    # JSON columns then arrive as their stored text (see ``plain_columns``).
    plain_rows: bool = False
    # Attributes every object shows with one fixed value (an SR-IOV VIP's ``vip_vnic_type``
    # is always ``normal`` here): Octavia accepts them as filters, so they match all rows
    # or none.
    constants: Mapping[str, str] = field(default_factory=dict)


def derived_spec(
    table: type[Base],
    *,
    aliases: Mapping[str, str] | None = None,
    exclude: Collection[str] = (),
    tag_capable: bool = True,
    plain_rows: bool = False,
    constants: Mapping[str, str] | None = None,
) -> ListSpec:
    """The ``ListSpec`` of ``table``: every scalar column under its own name (JSON-valued
    columns cannot be compared for equality portably, so they are neither filters nor sort
    keys), minus ``exclude``, plus ``aliases`` (API name -> column name).

    The default order is by ``created_at``, then by id; by id alone when ``created_at`` is
    excluded (flavors, zones and their profiles, which have none in Octavia's API, whose
    tables then sort by id)."""
    mapper = inspect(table)
    columns: dict[str, InstrumentedAttribute[Any]] = {}
    for attr in mapper.column_attrs:
        column = attr.columns[0]
        if attr.key in exclude or isinstance(column.type, JSON):
            continue
        columns[attr.key] = getattr(table, attr.key)
    for alias, name in (aliases or {}).items():
        columns[alias] = getattr(table, name)
    primary = mapper.get_property_by_column(mapper.primary_key[0]).key
    return ListSpec(
        table=table,
        columns=columns,
        id_column=getattr(table, primary),
        created_column=None if "created_at" in exclude else getattr(table, "created_at", None),
        tag_capable=tag_capable,
        plain_rows=plain_rows,
        constants=dict(constants or {}),
    )


def column_names(table: type[Base]) -> tuple[str, ...]:
    """The attribute names of ``table``'s columns, in declaration order."""
    return tuple(attr.key for attr in inspect(table).column_attrs)


def typed_filters(spec: ListSpec) -> tuple[frozenset[str], frozenset[str]]:
    """The API names of ``spec``'s boolean and integer columns (filters parsed as such)."""
    bools = {k for k, c in spec.columns.items() if isinstance(c.property.columns[0].type, Boolean)}
    ints = {k for k, c in spec.columns.items() if isinstance(c.property.columns[0].type, Integer)}
    return frozenset(bools), frozenset(ints)


def timestamp_filters(spec: ListSpec) -> frozenset[str]:
    """The API names of ``spec``'s timestamp columns (filters parsed as ISO 8601 times)."""
    columns = spec.columns.items()
    return frozenset(k for k, c in columns if isinstance(c.property.columns[0].type, DateTime))


def _equals(column: InstrumentedAttribute[Any], value: Any) -> ColumnElement[bool]:
    """``column == value``, except that a whole-second time matches that whole second: the
    API shows times to the second while rows keep microseconds, so a time read back from
    a response must still find its object."""
    if isinstance(value, datetime) and value.microsecond == 0:
        return and_(column >= value, column < value + timedelta(seconds=1))
    equal: ColumnElement[bool] = column == value
    return equal


@dataclass(frozen=True)
class ListQuery:
    filters: Mapping[str, Any] = field(default_factory=dict)
    tags_all: Sequence[str] = ()
    tags_any: Sequence[str] = ()
    not_tags_all: Sequence[str] = ()
    not_tags_any: Sequence[str] = ()
    sort: Sequence[tuple[str, bool]] = ()  # (api attribute, ascending)
    limit: int | None = None
    marker: str | None = None
    page_reverse: bool = False
    # Extra conditions from the caller (scope to a parent, hide DELETED, project scope).
    conditions: Sequence[ColumnElement[bool]] = ()


class BadMarker(Exception):
    """The marker id does not name a visible row."""


def not_deleted(table: Any) -> ColumnElement[bool]:
    """``provisioning_status != 'DELETED'`` with the word in the SQL, not bound: psycopg
    prepares a statement run five times, and PostgreSQL's generic plan for ``!= $1`` on a
    column with one distinct value (every load balancer ACTIVE) expects no row to match,
    so it sorted the whole table for every page instead of reading the index in order."""
    condition: ColumnElement[bool] = table.provisioning_status != literal_column(_DELETED_SQL)
    return condition


_DELETED_SQL = f"'{ProvisioningStatus.DELETED.value}'"


def _has_tag(spec: ListSpec, tag: str) -> ColumnElement[bool]:
    return exists().where(TagRow.resource_id == spec.id_column, TagRow.tag == tag)


def _tag_conditions(spec: ListSpec, query: ListQuery) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if query.tags_all:
        conds.append(and_(*[_has_tag(spec, t) for t in query.tags_all]))
    if query.tags_any:
        conds.append(or_(*[_has_tag(spec, t) for t in query.tags_any]))
    if query.not_tags_all:
        conds.append(~and_(*[_has_tag(spec, t) for t in query.not_tags_all]))
    if query.not_tags_any:
        conds.append(~or_(*[_has_tag(spec, t) for t in query.not_tags_any]))
    return conds


def _order_columns(
    spec: ListSpec, query: ListQuery
) -> list[tuple[InstrumentedAttribute[Any], bool]]:
    order = [(spec.columns[key], asc) for key, asc in query.sort]
    used = {id(col) for col, _ in order}
    for col in (spec.created_column, spec.id_column):
        if col is not None and id(col) not in used:
            order.append((col, True))
    return order


def _after_marker(
    order: list[tuple[InstrumentedAttribute[Any], bool]], values: Sequence[Any], reverse: bool
) -> ColumnElement[bool]:
    """Rows strictly after (or before, when reverse) the marker in the given order."""
    clauses: list[ColumnElement[bool]] = []
    for i, (col, asc) in enumerate(order):
        forward = asc != reverse
        value = values[i]
        if value is None:
            # NULLs sort first ascending in our convention; anything non-null is after.
            step = col.is_not(None) if forward else false()
        else:
            step = col > value if forward else col < value
        equal_prefix = [
            (order[j][0] == values[j]) if values[j] is not None else order[j][0].is_(None)
            for j in range(i)
        ]
        clauses.append(and_(*equal_prefix, step))
    after = or_(*clauses)
    first, ascending = order[0]
    if values[0] is None:
        return after
    # Implied by ``after``, but an index can start its scan there: without it a page
    # behind a marker read every row before the marker too.
    bound = first >= values[0] if ascending != reverse else first <= values[0]
    return and_(bound, after)


def plain_columns(table: type[Base]) -> list[KeyedColumnElement[Any]]:
    """The table's columns, with timestamps and JSON read as text under their own names.

    Parsing a timestamp into ``datetime`` only to format it again, and decoding ``[]``
    through the JSON type, was most of the cost of listing hundreds of rows; the views
    accept the text form (``api.views.common``). CAST gives the same text shape on SQLite
    and PostgreSQL (``YYYY-MM-DD HH:MM:SS[.ffffff]``).
    """
    out: list[KeyedColumnElement[Any]] = []
    for col in table.__table__.columns:
        if isinstance(col.type, DateTime | JSON):
            out.append(cast(col, String).label(col.key))
        else:
            out.append(col)
    return out


def list_rows(session: Session, spec: ListSpec, query: ListQuery) -> list[Any]:
    """Rows for one page (at most ``query.limit``), in the requested order."""
    columns = plain_columns(spec.table) if spec.plain_rows else [spec.table]
    stmt = page_statement(session.connection(), spec, query, columns)
    if spec.plain_rows:
        # Straight to the connection (the ORM's execute path adds nothing for Core rows),
        # and into named tuples: reading an attribute of SQLAlchemy's Row costs about 20
        # times more, which dominated rendering a page of hundreds of objects.
        make = plain_row_type(spec.table)._make
        return [make(row) for row in session.connection().execute(stmt).all()]
    return list(session.scalars(stmt))


def page_statement(
    conn: Connection, spec: ListSpec, query: ListQuery, columns: Sequence[Any]
) -> Select[Any]:
    """SELECT ``columns`` for one page: filters, tags, marker, order and limit applied."""
    stmt = select(*columns)
    for name, value in query.filters.items():
        if name in spec.constants:
            stmt = stmt if value == spec.constants[name] else stmt.where(false())
        else:
            stmt = stmt.where(_equals(spec.columns[name], value))
    for cond in [*query.conditions, *_tag_conditions(spec, query)]:
        stmt = stmt.where(cond)
    order = _order_columns(spec, query)
    if query.marker is not None:
        marker_row = conn.execute(
            select(*[col for col, _ in order]).where(
                spec.id_column == query.marker, *query.conditions
            )
        ).first()
        if marker_row is None:
            raise BadMarker(query.marker)
        values = list(marker_row)
        stmt = stmt.where(_after_marker(order, values, query.page_reverse))
    stmt = stmt.order_by(*[_ordered(col, asc) for col, asc in order])
    if query.limit is not None:
        stmt = stmt.limit(query.limit)
    return stmt


def _ordered(col: InstrumentedAttribute[Any], ascending: bool) -> ColumnElement[Any]:
    """NULLs first in ascending order, last in descending, on both databases; a column
    that holds no NULL is ordered plainly, so an index on it serves the order (an index
    is ``NULLS LAST`` on PostgreSQL, and ``created_at`` and ids are never NULL)."""
    if not col.property.columns[0].nullable:
        return col.asc() if ascending else col.desc()
    return col.asc().nulls_first() if ascending else col.desc().nulls_last()


@functools.cache
def plain_row_type(table: type[Base]) -> Any:
    """A named tuple with one field per column of ``table``, in column order."""
    fields = [col.key for col in table.__table__.columns]
    return collections.namedtuple(f"{table.__name__}Plain", fields)


def tags_of(session: Session, ids: Sequence[str]) -> dict[str, list[str]]:
    """Tags of many objects in one query."""
    out: dict[str, list[str]] = {i: [] for i in ids}
    if not ids:
        return out
    rows = session.connection().execute(
        select(TagRow.resource_id, TagRow.tag)
        .where(TagRow.resource_id.in_(bindparam("ids", expanding=True)))
        .order_by(TagRow.tag),
        {"ids": list(ids)},
    )
    for resource_id, tag in rows:
        out[resource_id].append(tag)
    return out


def set_tags(session: Session, resource_id: str, tags: Sequence[str]) -> None:
    """Replace an object's tags."""
    session.query(TagRow).filter(TagRow.resource_id == resource_id).delete()
    add_tags(session, resource_id, tags)


def add_tags(session: Session, resource_id: str, tags: Sequence[str]) -> None:
    """Tag an object created in this transaction (it has no tags to replace)."""
    for tag in dict.fromkeys(tags):
        session.add(TagRow(resource_id=resource_id, tag=tag))
