"""Groups (who announces what) and the lease watcher over a real SQLite store, fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.tier.groups import TierGroups
from lbaas.tier.lease import LeasePolicy, LeaseTable
from lbaas.tier.lease_store import LeaseStoreUnavailable, SqliteLeaseStore
from lbaas.tier.watcher import LeaseWatcher
from tests.unit.tier.test_lease import FakeClock, HealthPorts


def test_a_node_announces_the_vips_of_its_groups() -> None:
    groups = TierGroups()
    groups.add_group("a", [1, 2])
    groups.add_group("b", [2, 3])
    groups.place("10.0.0.1", "a")
    groups.place("10.0.0.2", "b")
    assert groups.announcements([1, 2, 3, 4]) == {
        1: ("10.0.0.1",),
        2: ("10.0.0.1", "10.0.0.2"),
        3: ("10.0.0.2",),
        4: (),
    }
    groups.grow("a", 3)
    groups.shrink("b", 2)
    groups.place("10.0.0.2", "a")  # moved: every node of a now, none of b's only
    assert groups.vips_of(3) == ("10.0.0.1", "10.0.0.2") and groups.vips_of(2) == groups.vips_of(3)
    with pytest.raises(ValueError):
        groups.shrink("b", 3)  # its last node
    with pytest.raises(KeyError):
        groups.place("10.0.0.3", "nowhere")


class Router:
    def __init__(self) -> None:
        self.actions: list[tuple[str, str]] = []

    def withdraw(self, node: str) -> None:
        self.actions.append(("withdraw", node))

    def restore(self, node: str) -> None:
        self.actions.append(("restore", node))


def _watcher(tmp_path: Path, health: HealthPorts) -> tuple[LeaseWatcher, FakeClock, Router]:
    clock, router = FakeClock(), Router()
    store = SqliteLeaseStore(tmp_path / "leases.sqlite")
    store.create()
    table = LeaseTable(LeasePolicy(0.5, 3), clock)
    for node in ("h1", "h2"):
        table.join(node)
    return LeaseWatcher(table, store, health, router.withdraw, router.restore), clock, router


def test_a_store_outage_alone_withdraws_nothing(tmp_path: Path) -> None:
    health = HealthPorts({"h1", "h2"})
    watcher, clock, router = _watcher(tmp_path, health)
    watcher.store.path.rename(tmp_path / "away")
    with pytest.raises(LeaseStoreUnavailable):
        watcher.store.renew("h1")  # never recreated empty by a writer
    clock.advance(5)
    report = watcher.sweep()
    assert not report.store_available and report.suspect_but_healthy == {"h1", "h2"}
    assert router.actions == [] and health.checked == ["h1", "h2"]


def test_missed_renewals_and_a_closed_health_port_withdraw_then_a_renewal_restores(
    tmp_path: Path,
) -> None:
    health = HealthPorts({"h1"})
    watcher, clock, router = _watcher(tmp_path, health)
    watcher.store.renew("h1")
    watcher.store.renew("h2")
    assert watcher.sweep().withdrawn == set()
    clock.advance(1.0)  # two intervals: not yet expired
    watcher.store.renew("h1")
    assert watcher.sweep().withdrawn == set()
    clock.advance(1.0)  # h2: 2 s without renewal > 1.5 s, and its health port is closed
    watcher.store.renew("h1")
    assert watcher.sweep().withdrawn == {"h2"} and router.actions == [("withdraw", "h2")]
    assert watcher.sweep().withdrawn == set()  # withdrawn once
    watcher.store.renew("h2")
    assert watcher.sweep().restored == {"h2"} and router.actions[-1] == ("restore", "h2")
