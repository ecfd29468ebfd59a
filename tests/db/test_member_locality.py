"""Where members run, from the ports bound to hosts (``locality``), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from lbaas.db.engine import Database
from lbaas.db.network import network_repo
from lbaas.network.ports import NewPort, PortFields, create_port
from lbaas.providers.distributed.base import Binding
from lbaas.providers.distributed.locality import PortHostBindings

NOW = datetime(2026, 11, 27, 4, 0, 0)


def network(database: Database, name: str, cidr: str) -> str:
    with database.write() as session:
        network_repo.ensure_network(session, f"net-{name}", name, NOW)
        network_repo.ensure_subnet(
            session, subnet_id=f"sub-{name}", network_id=f"net-{name}", cidr=cidr,
            ip_version=4, name=name, gateway_ip=None, now=NOW,
        )  # fmt: skip
    return f"net-{name}"


def port(database: Database, network_id: str, address: str, host: str) -> None:
    request = NewPort(network_id, "p1", PortFields(host_id=host), ip_address=address)
    with database.write() as session:
        create_port(session, request, NOW)


def test_only_ports_bound_to_a_host_place_an_address(database: Database) -> None:
    blue, green = (
        network(database, "blue", "10.1.0.0/24"),
        network(database, "green", "10.1.0.0/24"),
    )
    port(database, blue, "10.1.0.5", "host-a")
    port(database, green, "10.1.0.5", "host-b")  # the same address on another network
    port(database, blue, "10.1.0.6", "")  # unbound: on no host
    found = PortHostBindings(database).bindings(["10.1.0.5", "10.1.0.6", "10.1.0.7"])
    assert sorted(found) == ["10.1.0.5"]
    assert sorted(found["10.1.0.5"], key=lambda b: b.host_id) == [
        Binding("sub-blue", "host-a"), Binding("sub-green", "host-b"),
    ]  # fmt: skip
    assert PortHostBindings(database).bindings([]) == {}
