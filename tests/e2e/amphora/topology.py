"""Building the load balancers under test through the API, and taking them down again.

``LoadBalancerUnderTest`` is one load balancer a test created, with its VIP and the port
its listeners should use (free on that VIP when it was chosen). ``HttpService`` is the
usual tree on top of it: one listener, one default pool, one member per backend.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.amphora.backends import HttpBackend, ProxyProtocolBackend
from tests.e2e.amphora.octavia_api import OctaviaApi

LOOPBACK_SUBNET_ID = "7f000a00-0000-4000-8000-000000000001"


def free_port_on(address: str) -> int:
    """A TCP port nothing listens on at ``address`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


@dataclass
class LoadBalancerUnderTest:
    api: OctaviaApi
    id: str
    vip: str
    body: dict[str, Any]

    def port(self) -> int:
        """A listener port free on this VIP."""
        return free_port_on(self.vip)


@dataclass
class HttpService:
    """A load balancer with one listener, its default pool and the pool's members."""

    lb: LoadBalancerUnderTest
    listener: dict[str, Any]
    pool: dict[str, Any]
    port: int
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Member bodies by backend name."""

    @property
    def vip(self) -> str:
        return self.lb.vip

    @property
    def api(self) -> OctaviaApi:
        return self.lb.api

    def add_member(
        self, backend: HttpBackend | ProxyProtocolBackend, name: str, **fields: Any
    ) -> dict[str, Any]:
        member = self.api.create_member(
            self.lb.id, self.pool["id"], backend.address, backend.port, name=name, **fields
        )
        self.members[name] = member
        return member

    def member_status(self, name: str) -> str:
        status: str = self.api.member(self.pool["id"], self.members[name]["id"])["operating_status"]
        return status

    def tree_member_status(self, name: str) -> str | None:
        """The member's operating_status in the load balancer's status tree."""
        tree = self.api.status_tree(self.lb.id)["loadbalancer"]
        wanted = self.members[name]["id"]
        for listener in tree["listeners"]:
            for pool in listener["pools"]:
                for member in pool["members"]:
                    if member["id"] == wanted:
                        status: str = member["operating_status"]
                        return status
        return None


@contextmanager
def loadbalancer(api: OctaviaApi, name: str) -> Iterator[LoadBalancerUnderTest]:
    """A new load balancer on the loopback subnet, ACTIVE; deleted (cascade) afterwards."""
    body = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name=name)
    try:
        yield LoadBalancerUnderTest(api, body["id"], body["vip_address"], body)
    finally:
        api.delete_loadbalancer(body["id"])


def http_service(
    lb: LoadBalancerUnderTest,
    backends: Sequence[HttpBackend],
    *,
    algorithm: str = "ROUND_ROBIN",
    listener_fields: dict[str, Any] | None = None,
    pool_fields: dict[str, Any] | None = None,
    weights: Sequence[int] | None = None,
    protocol: str = "HTTP",
    pool_protocol: str | None = None,
) -> HttpService:
    """Listener + default pool + one member per backend (named as the backend)."""
    api = lb.api
    port = lb.port()
    listener = api.create_listener(lb.id, protocol, port, **(listener_fields or {}))
    pool = api.create_pool(
        lb.id,
        pool_protocol or protocol,
        algorithm,
        listener_id=listener["id"],
        **(pool_fields or {}),
    )
    service = HttpService(lb, listener, pool, port)
    for index, backend in enumerate(backends):
        extra = {} if weights is None else {"weight": weights[index]}
        service.add_member(backend, backend.name, **extra)
    return service
