"""The API clients of ``bench/scale.py``: threads, each with its own HTTP connection.

Each load balancer belongs to one of ``projects`` tenants (round robin) and is created as
that tenant (noauth's Keystone headers) with its whole tree in one POST: a listener, a
pool, two members and a health monitor. Most are ``distributed`` (TCP, Maglev over the
5-tuple, a TCP monitor); those whose index is in the amphora set are ``amphora`` (HTTP,
an HTTP monitor: a real HAProxy each), and with a ``Shape`` whose ``standby_flavor`` is
set, those in its standby set are amphora pairs (ACTIVE_STANDBY: the lab's). Reads mix a
tenant's show and list with an administrator's walk over every page of the full list.

``set_target`` names the API (several: the client threads are spread over them, thread
``k`` on the ``k``-th modulo their number) and the ``Shape``: serve's loopback subnet and
127.x members by default, the lab's VIP and member subnets and its backends with ``--lab``.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

LB = "/v2/lbaas/loadbalancers"
SUBNET = "7f000a00-0000-4000-8000-000000000001"  # serve's loopback subnet
PAGE = 1000  # api.pagination_max_limit's default
MONITOR = {"delay": 10, "timeout": 5, "max_retries": 3}


def project_of(index: int, projects: int) -> str:
    return f"scale-project-{index % projects:03d}"


def tenant(project: str) -> dict[str, str]:
    return {"X-Project-Id": project, "X-Roles": "member"}


@dataclass(frozen=True)
class Shape:
    """Where the load balancers go: their VIP subnet, their members (none: two 127.x
    addresses per load balancer on port 8000, serve's loopback world), the members'
    subnet, the ACTIVE_STANDBY flavor and which amphora indices use it."""

    vip_subnet: str = SUBNET
    members: tuple[tuple[str, int], ...] = ()
    member_subnet: str = ""
    standby_flavor: str = ""
    standby: frozenset[int] = frozenset()


def _members(index: int, shape: Shape) -> list[dict[str, Any]]:
    if not shape.members:
        return [
            {"address": f"127.{net}.{(index // 250) % 250}.{index % 250 + 1}",
             "protocol_port": 8000}
            for net in (200, 201)
        ]  # fmt: skip
    return [
        {"address": address, "protocol_port": port, "subnet_id": shape.member_subnet}
        for address, port in shape.members
    ]


def lb_body(index: int, amphora: bool) -> dict[str, Any]:
    shape = _TARGET.shape
    kind = "HTTP" if amphora else "TCP"
    members = _members(index, shape)
    pool = {
        "name": f"scale-{index}",
        "protocol": kind,
        "lb_algorithm": "ROUND_ROBIN" if amphora else "SOURCE_IP_PORT",
        "members": members,
        "healthmonitor": {"type": kind, **MONITOR},
    }
    body: dict[str, Any] = {
        "name": f"scale-{index}",
        "vip_subnet_id": shape.vip_subnet,
        "provider": "amphora" if amphora else "distributed",
        "listeners": [{"protocol": kind, "protocol_port": 80, "default_pool": pool}],
    }
    if amphora and index in shape.standby:
        body["flavor_id"] = shape.standby_flavor
    return {"loadbalancer": body}


@dataclass
class Timings:
    """Latencies per operation and errors, shared by the client threads."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, name: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - counted, reported as a figure
            with self.lock:
                self.errors[name] = self.errors.get(name, 0) + 1
                if len(self.examples) < 5:
                    self.examples.append(f"{name}: {exc!r}"[:300])
            return None
        with self.lock:
            self.seconds.setdefault(name, []).append(time.perf_counter() - start)
        return result

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: summarise(v) for name, v in sorted(self.seconds.items())}
        out["errors"] = dict(self.errors)
        if self.examples:
            out["error_examples"] = list(self.examples)
        return out


def summarise(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def pct(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {"n": len(ordered), "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1.0)}


def _checked(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 400:
        raise RuntimeError(f"{response.status_code} {response.text[:200]}")
    found: dict[str, Any] = orjson.loads(response.content)
    return found


def _fetch(method: Callable[..., httpx.Response], *args: Any, **kwargs: Any) -> dict[str, Any]:
    return _checked(method(*args, **kwargs))


def run_threads(clients: int, work: Callable[[httpx.Client, int], None]) -> float:
    """``work(http, k)`` on ``clients`` threads, each with its own client; wall seconds."""

    def one(k: int) -> None:
        urls = _TARGET.urls
        with httpx.Client(base_url=urls[k % len(urls)], timeout=120) as http:
            work(http, k)

    started = time.perf_counter()
    threads = [threading.Thread(target=one, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


@dataclass
class _Target:
    urls: list[str] = field(default_factory=lambda: [""])
    shape: Shape = field(default_factory=Shape)


_TARGET = _Target()


def set_target(urls: list[str], shape: Shape | None = None) -> None:
    """The APIs the client threads call (spread over them) and the load balancers' shape."""
    _TARGET.urls = list(urls)
    _TARGET.shape = shape or Shape()


def build(
    indices: list[int], amphorae: set[int], projects: int, clients: int, timings: Timings
) -> tuple[list[str], float]:
    """Create the load balancers ``indices`` from ``clients`` threads: (ids, wall seconds)."""
    ids: list[str] = []
    lock = threading.Lock()

    def work(http: httpx.Client, k: int) -> None:
        for index in indices[k::clients]:
            headers = tenant(project_of(index, projects))
            body = lb_body(index, index in amphorae)
            post = functools.partial(_fetch, http.post, LB, json=body, headers=headers)
            created = timings.timed("create", post)
            if created is not None:
                with lock:
                    ids.append(created["loadbalancer"]["id"])

    return ids, run_threads(clients, work)


def admin_walk(http: httpx.Client) -> int:
    """Every page of the administrator's full list; how many load balancers it held."""
    total, marker = 0, ""
    while True:
        params: dict[str, Any] = {"limit": PAGE}
        if marker:
            params["marker"] = marker
        page = _checked(http.get(LB, params=params))["loadbalancers"]
        total += len(page)
        if len(page) < PAGE:
            return total
        marker = page[-1]["id"]


def read_mix(
    by_project: dict[str, list[str]], clients: int, seconds: float, timings: Timings
) -> dict[str, Any]:
    """``clients`` threads for ``seconds``: 45 % a tenant's show, 45 % a tenant's list,
    10 % an administrator's full paginated list. Returns what the lists held."""
    projects = sorted(by_project)
    held: dict[str, list[int]] = {"tenant_list": [], "admin_list": []}
    deadline = time.monotonic() + seconds

    def work(http: httpx.Client, k: int) -> None:
        rnd = random.Random(k)
        while time.monotonic() < deadline:
            project = rnd.choice(projects)
            headers = tenant(project)
            draw = rnd.random()
            if draw < 0.45 and by_project[project]:
                lb_id = rnd.choice(by_project[project])
                timings.timed(
                    "show", functools.partial(_fetch, http.get, f"{LB}/{lb_id}", headers=headers)
                )
            elif draw < 0.9:
                listing = functools.partial(_fetch, http.get, LB, headers=headers)
                found = timings.timed("tenant_list", listing)
                if found is not None:
                    held["tenant_list"].append(len(found["loadbalancers"]))
            else:
                count = timings.timed("admin_full_list", functools.partial(admin_walk, http))
                if count is not None:
                    held["admin_list"].append(count)

    elapsed = run_threads(clients, work)
    done = sum(len(v) for v in timings.seconds.values())
    return {
        "requests_per_second": round(done / elapsed, 1),  # an admin walk counts once
        "tenant_list_lbs_median": _median(held["tenant_list"]),
        "admin_list_lbs_max": max(held["admin_list"], default=0),
    }


def _median(values: Iterable[int]) -> int:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0
