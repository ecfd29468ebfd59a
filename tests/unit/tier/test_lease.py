"""Leases of the tier's nodes with a fake clock: three missed renewals AND a failed health check."""

from __future__ import annotations

import pytest

from lbaas.tier.lease import LeasePolicy, LeaseTable


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class HealthPorts:
    """Which nodes answer on their health port; records what was checked."""

    def __init__(self, answering: set[str]) -> None:
        self.answering = answering
        self.checked: list[str] = []

    def __call__(self, node: str) -> bool:
        self.checked.append(node)
        return node in self.answering


def _table(*nodes: str) -> tuple[LeaseTable, FakeClock]:
    clock = FakeClock()
    table = LeaseTable(LeasePolicy(renew_interval=0.5, missed_renewals=3), clock)
    for node in nodes:
        table.join(node)
    return table, clock


def _renew_all_but(table: LeaseTable, clock: FakeClock, silent: str, intervals: int) -> None:
    for _ in range(intervals):
        clock.advance(0.5)
        for node in table.nodes:
            if node != silent:
                table.renew(node)


def test_a_renewing_tier_is_never_checked_nor_withdrawn() -> None:
    table, clock = _table("n1", "n2", "n3")
    health = HealthPorts(set())
    for _ in range(20):
        _renew_all_but(table, clock, "", 1)
        assert table.sweep(health).newly_down == frozenset()
    assert health.checked == []


def test_three_missed_renewals_and_a_dead_health_port_mark_a_node_down() -> None:
    table, clock = _table("n1", "n2", "n3")
    health = HealthPorts({"n1", "n3"})
    _renew_all_but(table, clock, "n2", 3)  # exactly three intervals: still within lifetime
    assert table.sweep(health).newly_down == frozenset() and health.checked == []
    _renew_all_but(table, clock, "n2", 1)
    result = table.sweep(health)
    assert result.newly_down == {"n2"} and table.is_down("n2")
    assert health.checked == ["n2"]
    # Reported once: the next sweep does not withdraw it again.
    assert table.sweep(health).newly_down == frozenset()


def test_an_expired_lease_with_a_live_health_port_is_kept() -> None:
    table, clock = _table("n1", "n2")
    _renew_all_but(table, clock, "n2", 5)
    result = table.sweep(HealthPorts({"n1", "n2"}))
    assert result.newly_down == frozenset() and result.suspect_but_healthy == {"n2"}
    assert not table.is_down("n2")


def test_a_lease_store_outage_alone_withdraws_nothing() -> None:
    # No renewal reaches the store: every lease expires at once, every node still answers.
    table, clock = _table("n1", "n2", "n3")
    clock.advance(10)
    result = table.sweep(HealthPorts({"n1", "n2", "n3"}))
    assert result.newly_down == frozenset()
    assert result.suspect_but_healthy == {"n1", "n2", "n3"}


def test_a_node_comes_back_with_its_next_renewal() -> None:
    table, clock = _table("n1")
    clock.advance(2)
    assert table.sweep(HealthPorts(set())).newly_down == {"n1"}
    assert table.renew("n1") is True and not table.is_down("n1")
    assert table.renew("n1") is False


def test_a_new_node_gets_a_full_lifetime_and_a_left_one_is_forgotten() -> None:
    table, clock = _table("n1")
    clock.advance(1.4)
    table.join("n2")
    clock.advance(0.2)
    assert table.expired("n1") and not table.expired("n2")
    table.leave("n1")
    assert list(table.nodes) == ["n2"] and table.expired("n1")


@pytest.mark.parametrize("policy", [(0, 3), (0.5, 0), (-1, 3)])
def test_a_bad_policy_is_refused(policy: tuple[float, int]) -> None:
    with pytest.raises(ValueError):
        LeasePolicy(*policy)
