"""Load balancer list pages rendered to JSON by the database itself.

Listing is what dashboards and Terraform refreshes do most, and for a page of hundreds
of load balancers the Python path (fetch twenty columns per row, convert timestamps, look
up children, build a dict per object, serialise) cost several milliseconds of CPU, most of
it interpreter overhead. Here each row comes back from SQLite or PostgreSQL as one finished
JSON object (``json_object`` / ``json_build_object``, children and tags as correlated
aggregates), and the API only joins the strings. The shape must stay exactly that of
``lbaas.api.views.loadbalancer.loadbalancer_view``; tests compare the two object by object
on both databases.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, String, case, cast, func, literal, literal_column, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Connection, Dialect

from lbaas.db.listing import ListQuery, ListSpec, page_statement
from lbaas.db.loadbalancers.loadbalancer_repo import LIVE_STATUSES
from lbaas.db.tables import ListenerRow, LoadBalancerRow, PoolRow, TagRow, table_of

_LBS = table_of(LoadBalancerRow).c
_LISTENERS = table_of(ListenerRow).c
_POOLS = table_of(PoolRow).c
_TAGS = table_of(TagRow).c


class _Dialect:
    """The handful of JSON functions whose spelling differs between the two databases."""

    def __init__(self, name: str) -> None:
        self.pg = name == "postgresql"

    def obj(self, *pairs: Any) -> Any:
        return func.json_build_object(*pairs) if self.pg else func.json_object(*pairs)

    def array_of(self, value: Any, order_by: Any | None = None) -> Any:
        """JSON array aggregate that gives ``[]``, not NULL, over no rows."""
        if self.pg:
            agg = func.json_agg(
                aggregate_order_by(value, order_by) if order_by is not None else value
            )
            return func.coalesce(agg, literal_column("'[]'::json"))
        return func.json_group_array(value)

    def timestamp(self, column: Any) -> Any:
        """ISO-8601 to the second, no zone: what ``views.common.timestamp`` writes."""
        if self.pg:
            # json_build_object writes a timestamp in that form itself, and faster than
            # to_char would format it (about a tenth of a page's statement).
            return func.date_trunc(literal("second"), column)
        return func.replace(func.substr(column, 1, 19), " ", "T")

    def boolean(self, column: Any) -> Any:
        if self.pg:
            return column
        # json('true') is constant, so SQLite evaluates it once, not once per row.
        return case((column, func.json("true")), else_=func.json("false"))

    def stored_json(self, column: Any) -> Any:
        return column if self.pg else func.json(column)


def _ids_of(d: _Dialect, table: Any) -> Any:
    """``[{"id": …}]`` of the live children of the outer load balancer row."""
    return (
        select(d.array_of(d.obj("id", table.id)))
        .where(table.loadbalancer_id == _LBS.id, table.provisioning_status.in_(LIVE_STATUSES))
        .scalar_subquery()
    )


def _tags_of(d: _Dialect) -> Any:
    if d.pg:
        return (
            select(d.array_of(_TAGS.tag, _TAGS.tag))
            .where(_TAGS.resource_id == _LBS.id)
            .scalar_subquery()
        )
    # SQLite (3.40) has no ORDER BY inside aggregates: aggregate an ordered derived table,
    # correlated explicitly (SQLAlchemy does not correlate a FROM subquery by itself).
    ordered = (
        select(_TAGS.tag)
        .where(_TAGS.resource_id == _LBS.id)
        .order_by(_TAGS.tag)
        .correlate(_LBS.id.table)
        .subquery()
    )
    return select(d.array_of(ordered.c.tag)).scalar_subquery()


@functools.cache
def loadbalancer_json(dialect: Dialect) -> ColumnElement[str]:
    """One column: the load balancer's API object as JSON text.

    Compiled to SQL text once per dialect and used as a literal column: SQLAlchemy would
    otherwise walk this large expression to compute a cache key on every request.
    """
    d = _Dialect(dialect.name)
    fields: list[tuple[str, Any]] = [
        ("id", _LBS.id),
        ("name", func.coalesce(_LBS.name, "")),
        ("description", func.coalesce(_LBS.description, "")),
        ("admin_state_up", d.boolean(_LBS.admin_state_up)),
        ("project_id", _LBS.project_id),
        ("tenant_id", _LBS.project_id),
        ("provisioning_status", _LBS.provisioning_status),
        ("operating_status", _LBS.operating_status),
        ("created_at", d.timestamp(_LBS.created_at)),
        ("updated_at", d.timestamp(_LBS.updated_at)),
        ("vip_address", _LBS.vip_address),
        ("vip_port_id", _LBS.vip_port_id),
        ("vip_subnet_id", _LBS.vip_subnet_id),
        ("vip_network_id", _LBS.vip_network_id),
        ("vip_qos_policy_id", _LBS.vip_qos_policy_id),
        ("vip_sg_ids", d.stored_json(_LBS.vip_sg_ids)),
        ("vip_vnic_type", literal("normal")),
        ("additional_vips", d.stored_json(_LBS.additional_vips)),
        ("listeners", _ids_of(d, _LISTENERS)),
        ("pools", _ids_of(d, _POOLS)),
        ("provider", func.coalesce(_LBS.provider, "octavia")),
        ("flavor_id", _LBS.flavor_id),
        ("availability_zone", _LBS.availability_zone),
        ("tags", _tags_of(d)),
    ]
    pairs: list[Any] = []
    for key, value in fields:
        pairs.extend((literal(key), value))
    # Text on both sides: PostgreSQL's json type would otherwise be parsed by the driver.
    expression = cast(d.obj(*pairs), String).label("json")
    # Compiled inside a SELECT from load_balancers so the subqueries correlate to it.
    compiled = str(
        select(expression)
        .select_from(_LBS.id.table)
        .compile(dialect=dialect, compile_kwargs={"literal_binds": True})
    )
    head, tail = "SELECT ", " AS json \nFROM load_balancers"
    assert compiled.startswith(head) and compiled.endswith(tail), compiled[-80:]
    return literal_column(compiled[len(head) : -len(tail)], String).label("json")


def list_loadbalancers_json(
    conn: Connection, spec: ListSpec, query: ListQuery
) -> tuple[list[str], list[str]]:
    """(ids, JSON objects) of one page of load balancers."""
    stmt = page_statement(conn, spec, query, [_LBS.id, loadbalancer_json(conn.dialect)])
    rows = conn.execute(stmt).all()
    return [row[0] for row in rows], [row[1] for row in rows]


class StoredLoadBalancer(NamedTuple):
    """What a show needs of one load balancer: who owns it, whether it is gone, its JSON."""

    project_id: str
    provisioning_status: str
    json: str


def loadbalancer_json_by_id(conn: Connection, lb_id: str) -> StoredLoadBalancer | None:
    """One load balancer's API object as JSON, with its project and status: a show in
    one statement (the ORM row and a query for its children were two, and most of the
    show's CPU)."""
    columns = (_LBS.project_id, _LBS.provisioning_status, loadbalancer_json(conn.dialect))
    row = conn.execute(select(*columns).where(_LBS.id == lb_id)).first()
    return None if row is None else StoredLoadBalancer(*row)


PageRenderer = Callable[[Connection, ListSpec, ListQuery], tuple[list[str], list[str]]]
