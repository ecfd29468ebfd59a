"""L7 policies on a real HAProxy: every rule type routes to its pool; redirects; REJECT."""

from __future__ import annotations

import pytest

from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.topology import HttpService, http_service, loadbalancer
from tests.e2e.amphora.traffic import request, wait_serving

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

Rule = tuple[str, str, str, dict[str, object]]
"""(type, compare_type, value, extra fields such as key and invert)."""

ROUTES: list[tuple[str, list[Rule]]] = [
    ("by-host", [("HOST_NAME", "EQUAL_TO", "api.example.com", {})]),
    ("by-path", [("PATH", "STARTS_WITH", "/static/", {})]),
    ("by-file", [("FILE_TYPE", "EQUAL_TO", "jpg", {})]),
    ("by-header", [("HEADER", "REGEX", "^gold-[0-9]+$", {"key": "X-Tier"})]),
    ("by-cookie", [("COOKIE", "CONTAINS", "choc", {"key": "flavor"})]),
    (
        "by-inverted",
        [
            ("PATH", "STARTS_WITH", "/inv", {}),
            ("HEADER", "ENDS_WITH", "-prod", {"key": "X-Env", "invert": True}),
        ],
    ),
]

# (path, headers, backend expected to answer)
REQUESTS: list[tuple[str, dict[str, str], str]] = [
    ("/", {}, "default"),
    ("/", {"Host": "api.example.com"}, "by-host"),
    ("/", {"Host": "API.Example.COM"}, "by-host"),
    ("/", {"Host": "www.example.com"}, "default"),
    ("/static/app.js", {}, "by-path"),
    ("/public/static/app.js", {}, "default"),
    ("/img/cat.jpg", {}, "by-file"),
    ("/img/cat.jpgx", {}, "default"),
    ("/", {"X-Tier": "gold-42"}, "by-header"),
    ("/", {"X-Tier": "gold-x"}, "default"),
    ("/", {"Cookie": "theme=dark; flavor=dark-chocolate"}, "by-cookie"),
    ("/", {"Cookie": "flavor=vanilla"}, "default"),
    ("/inventory", {"X-Env": "eu-dev"}, "by-inverted"),
    ("/inventory", {}, "by-inverted"),
    ("/inventory", {"X-Env": "eu-prod"}, "default"),
    # The first policy in position order wins: host before path.
    ("/static/app.js", {"Host": "api.example.com"}, "by-host"),
]


def route_to_pools(service: HttpService, fleet: BackendFleet) -> None:
    api, lb = service.api, service.lb
    for position, (name, rules) in enumerate(ROUTES, start=1):
        (backend,) = fleet.http(name)
        pool = api.create_pool(lb.id, "HTTP", "ROUND_ROBIN", name=name)
        api.create_member(lb.id, pool["id"], backend.address, backend.port)
        policy = api.create_l7policy(
            lb.id,
            service.listener["id"],
            "REDIRECT_TO_POOL",
            redirect_pool_id=pool["id"],
            position=position,
            name=f"to-{name}",
        )
        for rule_type, compare, value, extra in rules:
            api.create_l7rule(lb.id, policy["id"], rule_type, compare, value, **extra)


def add_redirects_and_reject(service: HttpService) -> None:
    api, lb, listener_id = service.api, service.lb, service.listener["id"]
    reject = api.create_l7policy(lb.id, listener_id, "REJECT", name="no-admin")
    api.create_l7rule(lb.id, reject["id"], "PATH", "EQUAL_TO", "/admin")
    moved = api.create_l7policy(
        lb.id,
        listener_id,
        "REDIRECT_TO_URL",
        redirect_url="http://new.example.com/landing",
        redirect_http_code=301,
        name="moved",
    )
    api.create_l7rule(lb.id, moved["id"], "PATH", "STARTS_WITH", "/old")
    prefixed = api.create_l7policy(
        lb.id,
        listener_id,
        "REDIRECT_PREFIX",
        redirect_prefix="https://www.example.com",
        redirect_http_code=308,
        name="legacy-host",
    )
    api.create_l7rule(lb.id, prefixed["id"], "HOST_NAME", "EQUAL_TO", "legacy.example.com")


def test_each_rule_type_routes_to_its_pool(api: OctaviaApi, backends: BackendFleet) -> None:
    default: list[HttpBackend] = backends.http("default")
    with loadbalancer(api, "l7-routing") as lb:
        service = http_service(lb, default)
        route_to_pools(service, backends)
        wait_serving(service.vip, service.port)
        wrong = []
        for path, headers, expected in REQUESTS:
            reply = request(service.vip, service.port, path, headers=headers)
            if (reply.status, reply.text) != (200, expected):
                wrong.append((path, headers, expected, reply.status, reply.text[:80]))
        assert wrong == [], "\n".join(map(str, wrong))


def test_redirects_and_reject(api: OctaviaApi, backends: BackendFleet) -> None:
    default = backends.http("default")
    with loadbalancer(api, "l7-redirects") as lb:
        service = http_service(lb, default)
        add_redirects_and_reject(service)
        vip, port = service.vip, service.port
        wait_serving(vip, port)

        rejected = request(vip, port, "/admin")
        assert rejected.status == 403
        assert request(vip, port, "/admin/users").text == "default"

        moved = request(vip, port, "/old/page?x=1")
        assert moved.status == 301
        assert moved.headers["location"] == "http://new.example.com/landing"

        prefixed = request(vip, port, "/some/path?q=2", headers={"Host": "legacy.example.com"})
        assert prefixed.status == 308
        assert prefixed.headers["location"] == "https://www.example.com/some/path?q=2"

        assert request(vip, port, "/some/path").text == "default"
