"""The reads of issue 34 send a fixed number of SQL statements, whatever the number of
load balancers: a show is one, a list is one (one page, children and tags inside it), a
pool's members list one per lookup and page. A per-object query creeping into a list
(an N+1) or a second round trip into a show fails here, on SQLite and on PostgreSQL.

The statements are counted on an API of its own (a second ``Database`` on the same
database, its engine's cursor events), so the worker's polls are not among them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from starlette.testclient import TestClient

from lbaas.api.services import ApiServices
from lbaas.compose import http_app
from lbaas.db.engine import Database
from tests.support.api_client import Api

LBS = "/v2/lbaas/loadbalancers"


class Counted:
    """An API on its own engine, and the statements it sent for the last request."""

    def __init__(self, plane: Any) -> None:
        self.database = Database(plane.settings.database_url)
        self.statements: list[str] = []
        event.listen(self.database.engine, "before_cursor_execute", self._seen)
        services = ApiServices(plane.settings, self.database, plane.providers)
        self.client = TestClient(http_app(services))

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not statement.startswith("BEGIN"):  # SQLite's transactions begin by a statement
            self.statements.append(statement)

    def statements_of(self, path: str, project: str, roles: str) -> int:
        self.statements.clear()
        response = self.client.get(path, headers={"X-Project-Id": project, "X-Roles": roles})
        assert response.status_code == 200, response.text
        return len(self.statements)


@pytest.fixture
def counted(plane: Any) -> Iterator[Counted]:
    found = Counted(plane)
    with found.client:
        yield found
    found.database.dispose()


def _tree(api: Api) -> dict[str, str]:
    lb = api.create_lb(tags=["a", "b"])
    listener = api.create_listener(lb["id"])
    pool = api.create_pool(lb["id"], listener_id=listener["id"])
    api.create_member(lb["id"], pool["id"], address="192.0.2.10")
    api.create_member(lb["id"], pool["id"], address="192.0.2.11")
    return {"lb": lb["id"], "pool": pool["id"]}


def _reads(counted: Counted, tree: dict[str, str]) -> dict[str, int]:
    tenant = ("p-alpha", "member")
    return {
        "show": counted.statements_of(f"{LBS}/{tree['lb']}", *tenant),
        "show_fields": counted.statements_of(f"{LBS}/{tree['lb']}?fields=id", *tenant),
        "tenant_list": counted.statements_of(LBS, *tenant),
        "admin_page": counted.statements_of(f"{LBS}?limit=1000", "p-admin", "admin"),
        "admin_marker_page": counted.statements_of(
            f"{LBS}?limit=2&marker={tree['lb']}", "p-admin", "admin"
        ),
        "members": counted.statements_of(f"/v2/lbaas/pools/{tree['pool']}/members", *tenant),
        "listeners": counted.statements_of("/v2/lbaas/listeners", *tenant),
        "pools": counted.statements_of("/v2/lbaas/pools", *tenant),
    }


def test_reads_send_as_many_statements_for_four_load_balancers_as_for_one(
    api: Api, counted: Counted
) -> None:
    first = _tree(api)
    one = _reads(counted, first)
    for _ in range(3):
        _tree(api)
    four = _reads(counted, first)
    assert four == one
    # The database renders a load balancer, children and tags included, in one statement.
    assert one["show"] == 1
    assert one["tenant_list"] == one["admin_page"] == 1
    assert one["admin_marker_page"] == 2  # the marker's row, then the page
