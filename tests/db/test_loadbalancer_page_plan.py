"""A page of the load balancer list reads its rows in order from an index, on SQLite and
on PostgreSQL, so its cost does not grow with the table (issue 34).

Without the ``(created_at, id)`` index, or with the order written ``NULLS FIRST`` (which
PostgreSQL's ascending index does not serve), each page sorted every load balancer; at
10,000 that sort was half of the page's statement. A page behind a marker must also start
the index scan at the marker: a bound the keyset condition implies, but an ``OR`` of
prefixes alone is no index range, so each next page read every row before it again.
The plans are asked for with sorting and sequential scans discouraged, so a plan that
still sorts, or filters instead of starting at the marker, is one no index can avoid.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Select

from lbaas.api.routers.loadbalancers import SPEC
from lbaas.db.engine import Database
from lbaas.db.listing import ListQuery, not_deleted, page_statement
from lbaas.db.loadbalancers.loadbalancer_json import loadbalancer_json
from lbaas.db.tables import LoadBalancerRow
from lbaas.model.enums import ProvisioningStatus
from tests.db.rows import add_loadbalancer

LIVE = (not_deleted(LoadBalancerRow),)
_OF_PROJECT_P = LoadBalancerRow.project_id == "p"


def _plan(database: Database, query: ListQuery) -> str:
    with database.engine.connect() as conn:
        columns = [LoadBalancerRow.id, loadbalancer_json(conn.dialect)]
        stmt: Select[Any] = page_statement(conn, SPEC, query, columns)
        compiled = stmt.compile(dialect=conn.dialect)
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET enable_sort = off")
            conn.exec_driver_sql("SET enable_seqscan = off")
            lines = conn.exec_driver_sql(f"EXPLAIN {compiled}", compiled.params).scalars()
        else:
            positional = tuple(compiled.params[name] for name in compiled.positiontup or [])
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", positional)
            lines = (row[-1] for row in rows)
        return "\n".join(lines)


def test_pages_read_the_order_from_the_index(database: Database) -> None:
    for n in range(3):
        add_loadbalancer(database, f"lb-{n}", ProvisioningStatus.ACTIVE)
    first = _plan(database, ListQuery(limit=2, conditions=LIVE))
    behind = _plan(database, ListQuery(limit=2, marker="lb-0", conditions=LIVE))
    if database.engine.dialect.name == "postgresql":
        for plan in (first, behind):
            assert "ix_load_balancers_created_id" in plan, plan
            assert "Sort" not in plan, plan
        assert re.search(r"Index Cond: \(+created_at >=", behind), behind
        tenant = _plan(database, ListQuery(limit=2, conditions=(*LIVE, _OF_PROJECT_P)))
        assert "Index Cond: ((project_id)::text" in tenant and "Sort" not in tenant, tenant
    else:
        for plan in (first, behind):
            assert "USING INDEX ix_load_balancers_created_id" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
        assert "ix_load_balancers_created_id (created_at>?)" in behind, behind


def test_the_live_rows_condition_binds_no_value() -> None:
    """psycopg prepares a statement run five times; PostgreSQL's generic plan then reads
    ``provisioning_status != $1`` on a column with one distinct value (every load
    balancer ACTIVE) as matching no row, and sorted the table for each page. With the
    word in the SQL the plans above are also the prepared statement's."""
    compiled = not_deleted(LoadBalancerRow).compile()
    assert compiled.params == {}
    assert "'DELETED'" in str(compiled)
