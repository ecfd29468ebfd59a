"""The distributed provider's nodes from the hosts registry, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from lbaas.config import load_settings
from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.model.fleet import HostAddress
from lbaas.providers.base import ProviderContext
from lbaas.providers.distributed.base import Node
from lbaas.providers.distributed.driver import DistributedProvider
from lbaas.providers.distributed.nodes import SettingsNodeDirectory
from lbaas.providers.distributed.registry import RegistryNodeDirectory

NOW = datetime(2026, 11, 26, 2, 0, 0)


def enrol(database: Database, host_id: str, address: str, up_at: float | None) -> None:
    with database.write() as session:
        where = HostAddress(host_id, address, 9443)
        host_repo.enrol(session, where, zone="nova", capacity=4, now=NOW, up_at=up_at)


def listed(*urls: str) -> SettingsNodeDirectory:
    overrides = {"providers": {"distributed_nodes": list(urls)}}
    return SettingsNodeDirectory(load_settings(environ={}, overrides=overrides))


def test_every_up_host_is_a_node_and_down_ones_are_not(database: Database) -> None:
    enrol(database, "host-b", "10.0.0.2", up_at=5.0)
    enrol(database, "host-a", "10.0.0.1", up_at=1.0)
    enrol(database, "host-c", "10.0.0.3", up_at=None)
    directory = RegistryNodeDirectory(database, listed(), listed_any=False)
    assert directory.nodes() == [
        Node("host-a", "https://10.0.0.1:9443", host_id="host-a"),
        Node("host-b", "https://10.0.0.2:9443", host_id="host-b"),
    ]
    with database.write() as session:  # host-a falls silent: it leaves the nodes
        silent = [s.host.host_id for s in host_repo.silent_up_hosts(session, 2.0)]
        host_repo.mark_silent_down(session, silent, heard_before=2.0)
    assert [node.name for node in directory.nodes()] == ["host-b"]


def test_listed_nodes_join_the_hosts_and_a_shared_url_counts_once(database: Database) -> None:
    enrol(database, "host-a", "10.0.0.1", up_at=1.0)
    directory = RegistryNodeDirectory(
        database, listed("https://10.0.0.1:9443", "https://10.0.0.9:9443/"), listed_any=True
    )
    assert [(n.name, n.agent_url, n.host_id) for n in directory.nodes()] == [
        ("host-a", "https://10.0.0.1:9443", "host-a"),
        ("10.0.0.9:9443", "https://10.0.0.9:9443", None),
    ]


def test_with_no_up_host_and_none_listed_the_local_agent_is_the_node(database: Database) -> None:
    enrol(database, "host-a", "10.0.0.1", up_at=None)
    directory = RegistryNodeDirectory(database, listed(), listed_any=False)
    [node] = directory.nodes()
    assert node.host_id is None and node.agent_url.endswith(":9443")


def test_the_provider_reads_the_registry_unless_told_not_to(database: Database) -> None:
    enrol(database, "host-a", "10.0.0.1", up_at=1.0)
    for use_hosts, expected in ((True, ["host-a"]), (False, ["127.0.0.1:9443"])):
        settings = load_settings(
            environ={},
            overrides={"providers": {"distributed_use_hosts": use_hosts}, "agent": {"port": 9443}},
        )
        provider = DistributedProvider(ProviderContext(settings, database))
        assert [n.name for n in provider._directory.nodes()] == expected
