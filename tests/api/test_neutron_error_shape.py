"""The Networking-shaped routes answer errors in Neutron's body, the Octavia routes in
Octavia's, whatever step refuses the request.

Neutron's ``{"NeutronError": {"type", "message", "detail"}}`` is what openstacksdk, the
openstack CLI and Horizon's neutronclient read from ``/v2.0`` (and lbaas's ``/v2`` copy of
those routes); ``type`` is Neutron's name of the condition where it has one, else the HTTP
error's. Octavia's paths, its ``/v2.0/lbaas`` alias included, keep ``faultstring``.
"""

from __future__ import annotations

import pytest

from lbaas.api.neutron_errors import NETWORKING_COLLECTIONS
from lbaas.api.routers import networking, networking_ports, networking_security_groups
from tests.api.resource_base import assert_fault, assert_neutron_fault
from tests.support.api_client import Api

NOPE = "00000000-0000-4000-8000-00000000dead"


def test_the_collections_are_those_of_the_networking_routers() -> None:
    routers = (networking.router, networking_ports.router, networking_security_groups.router)
    found = {route.path.split("/")[1] for router in routers for route in router.routes}  # type: ignore[attr-defined]
    assert found == NETWORKING_COLLECTIONS


@pytest.mark.parametrize("prefix", ["/v2.0", "/v2"])
def test_each_step_that_refuses_answers_neutrons_body(api: Api, prefix: str) -> None:
    assert_neutron_fault(api.get(f"{prefix}/ports/{NOPE}"), 404, NOPE, "PortNotFound")
    assert_neutron_fault(api.get(f"{prefix}/subnets/{NOPE}"), 404, NOPE, "SubnetNotFound")
    assert_neutron_fault(api.get(f"{prefix}/networks/{NOPE}"), 404, NOPE, "NetworkNotFound")
    bad = {"security_group_rule": {"security_group_id": NOPE, "direction": "up"}}
    schema = api.post(f"{prefix}/security-group-rules", json=bad)
    assert_neutron_fault(schema, 400, "direction", "HTTPBadRequest")
    not_json = api.post(
        f"{prefix}/security-groups", content=b"x", headers={"content-type": "text/plain"}
    )
    assert_neutron_fault(not_json, 415, "mimetype", "HTTPUnsupportedMediaType")
    refused = api.as_("p-beta", "").get(f"{prefix}/subnets")
    assert_neutron_fault(refused, 403, "", "HTTPForbidden")
    wrong_method = api.put(f"{prefix}/security-group-rules/{NOPE}", json={})
    assert_neutron_fault(wrong_method, 405, "not allowed", "HTTPMethodNotAllowed")
    assert "GET" in wrong_method.headers["allow"]
    html = api.get(f"{prefix}/ports", headers={"accept": "text/html"})
    assert_neutron_fault(html, 406, "application/json", "HTTPNotAcceptable")
    assert_neutron_fault(api.get(f"{prefix}/ports/a%00"), 400, "NUL", "HTTPBadRequest")


def test_a_path_no_route_serves_follows_its_api(api: Api) -> None:
    assert_neutron_fault(api.get("/v2.0/nothing"), 404, "could not be found", "HTTPNotFound")
    nothing = api.get("/v2/nothing")  # pecan's, as Octavia answers above its controllers
    assert nothing.status_code == 404 and set(nothing.json()) == {"code", "title", "description"}


def test_the_octavia_routes_keep_octavias_body(api: Api) -> None:
    for prefix in ("/v2", "/v2.0"):
        assert_fault(api.get(f"{prefix}/lbaas/loadbalancers/{NOPE}"), 404, NOPE)
    bad = {"listener": {"protocol": "TCP"}}
    assert_fault(api.post("/v2/lbaas/listeners", json=bad), 400, "Mandatory field missing")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"security_group_rule": {"security_group_id": NOPE, "direction": "up"}},
         "Invalid input for direction. Reason: 'up' is not in ['egress', 'ingress']."),
        ({"security_group_rule": {"security_group_id": NOPE, "direction": "ingress",
                                  "colour": "red", "size": 2}},
         "Unrecognized attribute(s) 'colour, size'"),
        ({"security_group_rule": {"direction": "ingress"}},
         "Failed to parse request. Required attribute 'security_group_id' not specified"),
        ({}, "Unable to find 'security_group_rule' in request body"),
        ({"security_group_rule": {"security_group_id": NOPE, "direction": "ingress",
                                  "port_range_min": "x"}},
         "Invalid input for port_range_min. Reason: 'x' is not an integer."),
    ],
)  # fmt: skip
def test_schema_errors_on_the_networking_routes_are_in_neutrons_words(
    api: Api, body: dict[str, object], words: str
) -> None:
    answer = api.post("/v2.0/security-group-rules", json=body)
    assert answer.status_code == 400
    assert answer.json()["NeutronError"]["message"] == words
