"""Bodies of the errors Octavia answers outside its handlers (issue 31, point 8).

Every expected answer here was recorded from Octavia 19.0.0 itself: its API run in
process by its own functional-test base (``octavia.tests.functional.api.v2.base.
BaseAPITest``: pecan 1.8, WSME 0.13, noauth, the noop driver, SQLite), given the same
requests. What its WSME handlers raise is the fault body; what fails before them is
pecan's ``{"code", "title", "description"}``: a path no controller serves (404), a
method a controller does not take (405), and its ``QueryParametersHook``'s checks of a
GET's ``limit`` and sort directions (400), which run before any filter, lookup or policy.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.resource_base import assert_fault, assert_pecan
from tests.support.api_client import Api

LBS = "/v2/lbaas/loadbalancers"
MISSING = "00000000-0000-0000-0000-000000000000"

# (path, Octavia 19's description): its REST controllers ``abort(404)`` (""), pecan's
# router raises a bare 404 above them (null).
UNROUTED = [
    ("/v2/lbaas/nothing", ""),
    ("/v2/nothing", ""),
    ("/v2.0/lbaas/nothing", ""),
    ("/v2/lbaas/loadbalancers/abc/extra/more", ""),
    ("/v2/lbaas/nothing?limit=x", ""),
    ("/nothing", None),
]


@pytest.mark.parametrize(("path", "description"), UNROUTED)
def test_a_path_no_controller_serves(api: Api, path: str, description: str | None) -> None:
    assert_pecan(api.get(path), 404, description)


def test_a_method_a_controller_does_not_take(api: Api) -> None:
    lb = api.create_lb()
    # Octavia 19: PATCH /v2/lbaas/loadbalancers/<id> and POST /v2/lbaas/quotas/defaults
    # are 405 {"code": 405, "title": "Method Not Allowed", "description": ""}.
    assert_pecan(api.request("PATCH", f"{LBS}/{lb['id']}"), 405, "")
    assert_pecan(api.request("POST", "/v2/lbaas/quotas/defaults"), 405, "")


def test_a_missing_object_is_still_the_fault_body(api: Api) -> None:
    r = api.get(f"{LBS}/{MISSING}")
    assert_fault(r, 404)
    assert r.json()["faultstring"] == f"Load Balancer {MISSING} not found."


# (query, Octavia 19's description) of the 400s its query hook raises in pecan's body.
HOOK_REFUSALS = [
    ("limit=x", "Supplied pagination limit 'x' is not valid."),
    ("sort_dir=UP&sort_key=id", "Supplied sort direction 'up' is not valid."),
    ("sort=id:up", "Supplied sort direction 'up' is not valid."),
    ("sort=a:b:c", "Supplied sort key '['a', 'b', 'c']' is not valid."),
    ("sort=bogus:up", "Supplied sort direction 'up' is not valid."),
    ("sort=id:", "Supplied sort direction '' is not valid."),
    ("sort=id:%20desc", "Supplied sort direction ' desc' is not valid."),
    ("limit=x&bogus=1", "Supplied pagination limit 'x' is not valid."),
]


@pytest.mark.parametrize(("query", "description"), HOOK_REFUSALS)
def test_page_parameters_the_query_hook_refuses(api: Api, query: str, description: str) -> None:
    api.create_lb()
    assert_pecan(api.get(f"{LBS}?{query}"), 400, description)


def test_the_query_hook_runs_before_the_lookup_of_one_object(api: Api) -> None:
    lb = api.create_lb()
    limit = "Supplied pagination limit 'x' is not valid."
    # Octavia 19: 400 in pecan's body for a load balancer that exists and one that does not.
    assert_pecan(api.get(f"{LBS}/{lb['id']}?limit=x"), 400, limit)
    assert_pecan(api.get(f"{LBS}/{MISSING}?limit=x"), 400, limit)
    assert_pecan(api.get(f"{LBS}/{lb['id']}/stats?limit=x"), 400, limit)


# (query, Octavia 19's faultstring) of what its handler finds, in the fault body.
HANDLER_REFUSALS = [
    ("marker=x", "Supplied pagination marker 'x' is not valid."),
    ("sort_key=bogus", "Supplied sort key 'bogus' is not valid."),
    ("bogus=1&sort=bogus", "One or more arguments are either duplicate or invalid"),
]


@pytest.mark.parametrize(("query", "faultstring"), HANDLER_REFUSALS)
def test_page_parameters_the_handler_refuses(api: Api, query: str, faultstring: str) -> None:
    api.create_lb()
    r = api.get(f"{LBS}?{query}")
    assert_fault(r, 400)
    assert r.json()["faultstring"] == faultstring


def test_what_octavia_lets_through(api: Api) -> None:
    lb = api.create_lb()
    # Octavia 19: directions beyond sort_key's keys are never read (200); unknown and
    # comma-joined ``fields`` names select nothing (200, one empty object per item).
    r = api.get(f"{LBS}?sort_key=id&sort_dir=asc,bogus")
    assert r.status_code == 200 and [x["id"] for x in r.json()["loadbalancers"]] == [lb["id"]]
    for fields in ("bogus", "id,name"):
        shown: Any = api.get(f"{LBS}?fields={fields}").json()
        assert shown == {"loadbalancers": [{}], "loadbalancers_links": []}
