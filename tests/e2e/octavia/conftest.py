"""A real Octavia with lbaas as its provider: ``lbaas serve`` (amphora provider, real
HAProxy on loopback VIPs), Octavia's API and driver agent on a fresh MariaDB database, and
one endpoint in front for the stock ``openstack`` CLI. One for the package: starting
Octavia costs tens of seconds; each test makes and removes its own load balancer (and the
restart test leaves the driver agent running again)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest

from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.openstack_cli import OpenstackCli
from tests.e2e.amphora.serve_process import ServeInstance, running_serve
from tests.support.catalog_proxy import catalog_proxy
from tests.support.octavia_service import Octavia, running_octavia
from tests.support.openstack_venv import openstack_command

PROJECT = "p-octavia"


@dataclass
class Front:
    """Octavia in front of one lbaas, a client of each, and the CLI pointed at Octavia."""

    octavia: Octavia
    cli: OpenstackCli
    octavia_api: httpx.Client
    lbaas_api: httpx.Client


@dataclass
class Sides(Front):
    """Both control planes, lbaas being ``lbaas serve`` with the amphora provider."""

    serve: ServeInstance

    def vip(self, host: int) -> str:
        return str(ipaddress.ip_network(self.serve.vip_subnet)[host])


@contextmanager
def octavia_for(lbaas_url: str) -> Iterator[Front]:
    """A real Octavia whose lbaas providers drive the lbaas API at ``lbaas_url``, and the
    stock CLI through one endpoint in front of both (a catalog's routing)."""
    with running_octavia(lbaas_url) as octavia, catalog_proxy(octavia.url, lbaas_url) as front:
        cli = OpenstackCli(front)
        cli.base = [
            openstack_command("openstack"),
            "--os-auth-type",
            "none",
            "--os-endpoint",
            front,
        ]
        with (
            httpx.Client(base_url=octavia.url, timeout=30) as o_api,
            httpx.Client(base_url=lbaas_url, timeout=30) as l_api,
        ):
            yield Front(octavia, cli, o_api, l_api)


@pytest.fixture(scope="package")
def sides() -> Iterator[Sides]:
    with running_serve(prefix="lbo-") as serve, octavia_for(serve.url) as front:
        yield Sides(front.octavia, front.cli, front.octavia_api, front.lbaas_api, serve)


@pytest.fixture
def backends() -> Iterator[list[HttpBackend]]:
    started = [HttpBackend("one"), HttpBackend("two")]
    try:
        yield started
    finally:
        for backend in started:
            backend.close()
