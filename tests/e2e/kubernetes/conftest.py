"""The Kubernetes controller end to end: kmock as the Kubernetes API, a real lbaas control
plane (API + worker, noop provider, SQLite) served over HTTP as its Octavia."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.control_plane import asgi_app, make_settings, running_control_plane
from tests.support.served_app import served


@pytest.fixture(scope="module")
def octavia_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state: Path = tmp_path_factory.mktemp("k8s-plane")
    settings = make_settings(state, api={"auth_strategy": "noauth"})
    with running_control_plane(settings) as plane, served(asgi_app(plane)) as url:
        yield url


class Octavia:
    """What lbaas holds, read through its API (the test's own eyes)."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=f"{url}/v2/lbaas", timeout=30)

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def load_balancers(self, tag: str) -> list[dict[str, Any]]:
        found = self.get("/loadbalancers", tags=tag)["loadbalancers"]
        return [lb for lb in found if lb["provisioning_status"] != "DELETED"]

    def tree(self, lb_id: str) -> dict[tuple[str, int], list[tuple[str, int]]]:
        """(protocol, port) of each listener → its default pool's (address, port)s."""
        tree = {}
        for listener in self.get("/listeners", loadbalancer_id=lb_id)["listeners"]:
            members = []
            if listener["default_pool_id"]:
                pool_members = self.get(f"/pools/{listener['default_pool_id']}/members")
                members = sorted(
                    (m["address"], m["protocol_port"]) for m in pool_members["members"]
                )
            tree[(listener["protocol"], listener["protocol_port"])] = members
        return tree


@pytest.fixture(scope="module")
def octavia(octavia_url: str) -> Iterator[Octavia]:
    api = Octavia(octavia_url)
    try:
        yield api
    finally:
        api.client.close()
