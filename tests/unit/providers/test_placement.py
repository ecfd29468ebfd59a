"""Placement: least-loaded live host with room, avoiding a failed host, pairs split."""

from __future__ import annotations

import pytest

from lbaas.model.fleet import HostAddress, HostLoad
from lbaas.providers.amphora.placement import (
    NoHostAvailable,
    PairPlacementImpossible,
    place_one,
    place_pair,
    place_pair_member,
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


def test_a_pair_member_never_joins_a_host_of_its_pair_and_takes_the_least_loaded() -> None:
    hosts = [host("a", 0), host("b", 3), host("c", 2)]
    # The first member of a new pair: the least-loaded host, when a second one exists.
    assert place_pair_member(hosts, zone=None, pair_hosts=frozenset()).host_id == "a"
    # The second: least-loaded of the rest, although "a" is emptier.
    joined = place_pair_member(hosts, zone=None, pair_hosts=frozenset({"a"}))
    assert joined.host_id == "c"


def test_a_replacement_avoids_the_survivor_strictly_and_the_failed_host_if_it_can() -> None:
    hosts = [host("a", 0), host("b", 0), host("c", 5)]
    survivor, failed = frozenset({"a"}), frozenset({"b"})
    chosen = place_pair_member(hosts, zone=None, pair_hosts=survivor, avoid=failed)
    assert chosen.host_id == "c"  # off the failed host although it is emptier
    only_failed = [host("a", 0), host("b", 0)]
    chosen = place_pair_member(only_failed, zone=None, pair_hosts=survivor, avoid=failed)
    assert chosen.host_id == "b"  # back on it rather than beside the survivor


def test_a_pair_member_with_no_other_host_is_refused_naming_how_many_could_take_one() -> None:
    with pytest.raises(PairPlacementImpossible) as alone:
        place_pair_member([host("a", 0)], zone="nova", pair_hosts=frozenset())
    assert "only 1 can take one in zone 'nova'" in alone.value.user_message
    full = [host("a", 1), host("b", 1, capacity=1)]
    with pytest.raises(PairPlacementImpossible) as beside:
        place_pair_member(full, zone=None, pair_hosts=frozenset({"a"}))
    assert "only 1" in beside.value.user_message  # "b" is full, "a" is the survivor's
    assert "a" in beside.value.operator_message
