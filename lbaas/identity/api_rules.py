"""Octavia's per-endpoint policy rules (``os_load-balancer_api:<resource>:<action>``).

One table says, for each rule, the building block it defaults to, and the method and path
it guards. oslo.policy gets them as documented defaults (the sample generator prints them
with their paths), and the same table tells which rules a request's route is guarded by
(``rules_of_route``), so an operator's policy file can loosen or tighten one endpoint
without touching the others, as with Octavia.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from oslo_policy.policy import DocumentedRuleDefault

PREFIX = "os_load-balancer_api"
READ, READ_GLOBAL, WRITE, ADMIN = (
    "load-balancer:read",
    "load-balancer:read-global",
    "load-balancer:write",
    "load-balancer:admin",
)
READ_QUOTA, READ_QUOTA_GLOBAL, WRITE_QUOTA = (
    "load-balancer:read-quota",
    "load-balancer:read-quota-global",
    "load-balancer:write-quota",
)
MEMBERS_LIST = f"{PREFIX}:member:get_all"


@dataclass(frozen=True)
class EndpointRule:
    name: str
    #: The building block (or rule) the endpoint's default check is, and which a handler
    #: asks for: the endpoint rule stands for it on this route.
    stands_for: str
    check: str
    method: str
    path: str


def _tree(collection: str, key: str) -> Iterator[tuple[str, str, str, str]]:
    item = f"{collection}/{{{key}}}"
    yield "get_all", READ, "GET", collection
    yield "get_all-global", READ_GLOBAL, "GET", collection
    yield "get_one", READ, "GET", item
    yield "post", WRITE, "POST", collection
    yield "put", WRITE, "PUT", item
    yield "delete", WRITE, "DELETE", item


def _catalog(collection: str, key: str, read: str) -> Iterator[tuple[str, str, str, str]]:
    item = f"{collection}/{{{key}}}"
    yield "get_all", read, "GET", collection
    yield "get_one", read, "GET", item
    yield "post", ADMIN, "POST", collection
    yield "put", ADMIN, "PUT", item
    yield "delete", ADMIN, "DELETE", item


_LB, _LISTENERS = "/v2/lbaas/loadbalancers", "/v2/lbaas/listeners"
_MEMBERS = "/v2/lbaas/pools/{pool_id}/members"
_RULES = "/v2/lbaas/l7policies/{l7policy_id}/rules"
_QUOTAS, _AMPHORAE = "/v2/lbaas/quotas", "/v2/octavia/amphorae"
_PROVIDER = "/v2/lbaas/providers/{provider}"


def _rows() -> Iterator[tuple[str, str, str, str, str]]:
    for resource, collection, key in (
        ("loadbalancer", _LB, "loadbalancer_id"),
        ("listener", _LISTENERS, "listener_id"),
        ("pool", "/v2/lbaas/pools", "pool_id"),
        ("healthmonitor", "/v2/lbaas/healthmonitors", "healthmonitor_id"),
        ("l7policy", "/v2/lbaas/l7policies", "l7policy_id"),
    ):
        yield from ((resource, *row) for row in _tree(collection, key))
    for resource, collection, key in (
        ("member", _MEMBERS, "member_id"),
        ("l7rule", _RULES, "l7rule_id"),
    ):
        rows = _tree(collection, key)
        yield from ((resource, *row) for row in rows if row[0] != "get_all-global")
    yield "loadbalancer", "get_stats", READ, "GET", f"{_LB}/{{loadbalancer_id}}/stats"
    yield "loadbalancer", "get_status", READ, "GET", f"{_LB}/{{loadbalancer_id}}/status"
    yield "loadbalancer", "get_status", READ, "GET", f"{_LB}/{{loadbalancer_id}}/statuses"
    yield "loadbalancer", "put_failover", ADMIN, "PUT", f"{_LB}/{{loadbalancer_id}}/failover"
    yield "listener", "get_stats", READ, "GET", f"{_LISTENERS}/{{listener_id}}/stats"
    # A batch update of a pool's members creates, updates and deletes members.
    for action in ("post", "put", "delete"):
        yield "member", action, WRITE, "PUT", _MEMBERS
    yield "quota", "get_all", READ_QUOTA, "GET", _QUOTAS
    yield "quota", "get_all-global", READ_QUOTA_GLOBAL, "GET", _QUOTAS
    yield "quota", "get_one", READ_QUOTA, "GET", f"{_QUOTAS}/{{project_id}}"
    yield "quota", "put", WRITE_QUOTA, "PUT", f"{_QUOTAS}/{{project_id}}"
    yield "quota", "delete", WRITE_QUOTA, "DELETE", f"{_QUOTAS}/{{project_id}}"
    yield "quota", "get_defaults", READ_QUOTA, "GET", f"{_QUOTAS}/{{project_id}}/default"
    yield "quota", "get_defaults", READ_QUOTA, "GET", f"{_QUOTAS}/defaults"
    yield "provider", "get_all", READ, "GET", "/v2/lbaas/providers"
    yield "provider-flavor", "get_all", ADMIN, "GET", f"{_PROVIDER}/flavor_capabilities"
    yield (
        "provider-availability-zone",
        "get_all",
        ADMIN,
        "GET",
        f"{_PROVIDER}/availability_zone_capabilities",
    )
    for resource, collection, key, read in (
        ("flavor", "/v2/lbaas/flavors", "flavor_id", READ),
        ("flavor-profile", "/v2/lbaas/flavorprofiles", "flavorprofile_id", ADMIN),
        ("availability-zone", "/v2/lbaas/availabilityzones", "availability_zone_name", READ),
        (
            "availability-zone-profile",
            "/v2/lbaas/availabilityzoneprofiles",
            "availability_zone_profile_id",
            ADMIN,
        ),
    ):
        yield from ((resource, *row) for row in _catalog(collection, key, read))
    amphora = f"{_AMPHORAE}/{{amphora_id}}"
    yield "amphora", "get_all", ADMIN, "GET", _AMPHORAE
    yield "amphora", "get_one", ADMIN, "GET", amphora
    yield "amphora", "delete", ADMIN, "DELETE", amphora
    yield "amphora", "put_failover", ADMIN, "PUT", f"{amphora}/failover"
    yield "amphora", "put_config", ADMIN, "PUT", f"{amphora}/config"
    yield "amphora", "get_stats", ADMIN, "GET", f"{amphora}/stats"


def _check(name: str, stands_for: str) -> str:
    if name == MEMBERS_LIST:
        return f"rule:{READ} or rule:service"
    return f"rule:{stands_for}"


ENDPOINT_RULES = tuple(
    EndpointRule(
        n := f"{PREFIX}:{resource}:{action}",
        MEMBERS_LIST if n == MEMBERS_LIST else base,
        _check(n, base),
        method,
        path,
    )
    for resource, action, base, method, path in _rows()
)


def _shape(path: str) -> str:
    """A path template with its parameter names erased: lbaas and Octavia name them apart."""
    return re.sub(r"\{[^}]*\}", "{}", path)


_BY_ROUTE: dict[tuple[str, str], tuple[EndpointRule, ...]] = {}
for _endpoint in ENDPOINT_RULES:
    _key = (_endpoint.method, _shape(_endpoint.path))
    _BY_ROUTE[_key] = (*_BY_ROUTE.get(_key, ()), _endpoint)


def rules_of_route(method: str, path_template: str) -> tuple[EndpointRule, ...]:
    """The endpoint rules guarding a route (none for lbaas's own routes)."""
    return _BY_ROUTE.get((method.upper(), _shape(path_template)), ())


def list_rules() -> list[DocumentedRuleDefault]:
    """One documented default per rule name, with every path it guards."""
    grouped: dict[str, list[EndpointRule]] = {}
    for endpoint in ENDPOINT_RULES:
        grouped.setdefault(endpoint.name, []).append(endpoint)
    return [
        DocumentedRuleDefault(
            name,
            endpoints[0].check,
            f"{name.split(':')[-1]} of {name.split(':')[1]} (Octavia v2 API).",
            [{"method": e.method, "path": e.path} for e in endpoints],
            scope_types=["project"],
        )
        for name, endpoints in grouped.items()
    ]
