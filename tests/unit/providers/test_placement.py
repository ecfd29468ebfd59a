"""Placement: least-loaded live host with room, avoiding a failed host, pairs split."""

from __future__ import annotations

import pytest

from lbaas.model.fleet import HostAddress, HostLoad
from lbaas.providers.amphora.placement import (
    NoHostAvailable,
    PairPlacementImpossible,
    place_one,
    place_pair,
)


def host(host_id: str, amphorae: int, capacity: int = 10) -> HostLoad:
    return HostLoad(HostAddress(host_id, "127.0.0.1", 9443), "nova", capacity, amphorae)


def test_the_least_loaded_host_with_room_is_chosen() -> None:
    hosts = [host("a", 3), host("b", 1), host("c", 1, capacity=1), host("d", 2)]
    assert place_one(hosts, zone=None).host_id == "b"  # c is full
    assert place_one([host("x", 1), host("w", 1)], zone="nova").host_id == "w"  # ties: by id


def test_placing_repeatedly_keeps_hosts_within_one() -> None:
    counts = {"a": 0, "b": 0, "c": 0}
    for _ in range(20):
        chosen = place_one([host(h, n) for h, n in counts.items()], zone=None)
        counts[chosen.host_id] += 1
    assert max(counts.values()) - min(counts.values()) <= 1


def test_a_failover_avoids_the_old_host_unless_it_is_the_only_one() -> None:
    hosts = [host("a", 0), host("b", 5)]
    assert place_one(hosts, zone=None, avoid=frozenset({"a"})).host_id == "b"
    assert place_one([host("a", 0)], zone=None, avoid=frozenset({"a"})).host_id == "a"


def test_no_host_with_room_is_a_temporary_error_naming_the_zone() -> None:
    with pytest.raises(NoHostAvailable) as raised:
        place_one([host("a", 1, capacity=1)], zone="rack-1")
    assert "rack-1" in raised.value.operator_message


def test_a_pair_goes_to_two_distinct_hosts_or_is_refused_clearly() -> None:
    first, second = place_pair([host("a", 0), host("b", 4), host("c", 2)], zone=None)
    assert (first.host_id, second.host_id) == ("a", "c")
    with pytest.raises(PairPlacementImpossible) as refused:
        place_pair([host("a", 0), host("b", 1, capacity=1)], zone="nova")
    assert "two amphora hosts" in refused.value.user_message
    assert "only 1" in refused.value.user_message
