"""The engine's choices, with a recording NftOps: full loads, slot updates, live flows."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from lbaas.errors import InvalidInput
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.base import FlowMatch, NftCommandFailed
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.maglev import build_table, moved_slots
from lbaas.l4.service import (
    MAGLEV,
    HashKey,
    L4Listener,
    L4Member,
    L4Protocol,
    L4Service,
    LiveFlowPolicy,
    hash_key_for,
)
from lbaas.model.enums import LbAlgorithm, PersistenceType

LB = "0b6c51c8-5d51-4f57-8f55-0a1b2c3d4e5f"
MEMBERS = tuple(L4Member(f"member-{n}", f"10.30.0.{n}", 8080) for n in range(1, 6))


def service(
    members: tuple[L4Member, ...],
    size: int = 101,
    vip: str = "10.30.1.1",
    live_flows: LiveFlowPolicy = LiveFlowPolicy.KEEP,
) -> L4Service:
    listener = L4Listener(L4Protocol.TCP, 80, members, table_size=size, live_flows=live_flows)
    return L4Service(LB, vip, (listener,))


def cutting(members: tuple[L4Member, ...]) -> L4Service:
    return service(members, live_flows=LiveFlowPolicy.CUT)


def test_the_first_apply_checks_then_loads_the_whole_table() -> None:
    ops = RecordingNftOps()
    report = L4Engine(ops).apply(service(MEMBERS))
    assert report.full_reload and report.moved_slots == 101
    assert ops.checked == ops.loaded
    assert "flush chain ip lbaas lb_0b6c51c85d51\n" in ops.loaded[0]
    assert (
        "add element ip lbaas dispatch { 10.30.1.1 . tcp . 80 : jump lb_0b6c51c85d51 }"
        in ops.loaded[0]
    )


def test_a_member_change_rewrites_only_the_moved_slots() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    report = engine.apply(service(MEMBERS[1:]))
    before = build_table((m.backend for m in MEMBERS), 101)
    after = build_table((m.backend for m in MEMBERS[1:]), 101)
    moved = moved_slots(before, after)
    assert not report.full_reload and report.moved_slots == len(moved) < 101
    update = ops.loaded[-1]
    assert len(ops.checked) == 1  # the transaction itself is the check of an update
    deleted = update.split("{ ", 1)[1].split(" }", 1)[0]
    assert sorted(int(slot) for slot in deleted.split(", ")) == moved
    assert "10.30.0.1 " not in update


def test_a_member_found_down_loses_exactly_its_slots() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    sick = MEMBERS[2]
    unhealthy = tuple(replace(m, healthy=False) if m == sick else m for m in MEMBERS)
    report = engine.apply(service(unhealthy))
    owned = build_table((m.backend for m in MEMBERS), 101).shares()[sick.key]
    assert not report.full_reload and report.moved_slots == owned
    assert f"{sick.address} " not in ops.loaded[-1]
    back = engine.apply(service(MEMBERS))
    assert not back.full_reload and back.moved_slots == owned


class FailingUpdates(RecordingNftOps):
    """Refuses the next slot update, as nft does when the table vanished."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse_updates = 0

    def load(self, ruleset: str) -> None:
        if ruleset.startswith("delete element") and self.refuse_updates:
            self.refuse_updates -= 1
            raise NftCommandFailed(["nft", "-f", "-"], 1, "No such file or directory")
        super().load(ruleset)


def test_a_refused_slot_update_falls_back_to_a_full_reload() -> None:
    ops = FailingUpdates()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    ops.refuse_updates = 1
    report = engine.apply(service(MEMBERS[1:]))
    assert report.full_reload
    assert "10.30.0.1 " not in ops.loaded[-1] and len(ops.checked) == 2
    assert not engine.apply(service(MEMBERS)).full_reload  # back to slot updates


def test_the_same_service_again_changes_nothing() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    report = engine.apply(service(MEMBERS))
    assert report.moved_slots == 0 and len(ops.loaded) == 1


@pytest.mark.parametrize(
    "changed",
    [
        service(MEMBERS, vip="10.30.1.2"),
        service(MEMBERS, size=103),
        service(()),
        service(tuple(replace(m, healthy=False) for m in MEMBERS)),
        L4Service(LB, "10.30.1.1", (L4Listener(L4Protocol.UDP, 80, MEMBERS, table_size=101),)),
        L4Service(
            LB,
            "10.30.1.1",
            (L4Listener(L4Protocol.TCP, 80, MEMBERS, HashKey.SOURCE_ADDRESS, table_size=101),),
        ),
        L4Service(
            LB,
            "10.30.1.1",
            (L4Listener(L4Protocol.TCP, 80, MEMBERS, table_size=101, connection_limit=10),),
        ),
    ],
    ids=["vip", "size", "no-members", "all-down", "protocol", "hash-key", "limit"],
)
def test_a_change_of_rules_reloads_the_table(changed: L4Service) -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    assert engine.apply(changed).full_reload
    assert "flush chain ip lbaas lb_0b6c51c85d51\n" in ops.loaded[-1]


def test_cut_deletes_the_flows_of_removed_members_only() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(cutting(MEMBERS))
    engine.apply(cutting(MEMBERS[:3]))
    assert ops.deleted_flows == [
        FlowMatch(L4Protocol.TCP, "10.30.1.1", 80, "10.30.0.4", 8080),
        FlowMatch(L4Protocol.TCP, "10.30.1.1", 80, "10.30.0.5", 8080),
    ]


def test_cut_deletes_the_flows_of_a_member_found_down() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(cutting(MEMBERS))
    engine.apply(cutting(tuple(replace(m, healthy=m != MEMBERS[1]) for m in MEMBERS)))
    assert ops.deleted_flows == [FlowMatch(L4Protocol.TCP, "10.30.1.1", 80, "10.30.0.2", 8080)]
    engine.apply(cutting(tuple(replace(m, healthy=m != MEMBERS[1]) for m in MEMBERS)))
    assert len(ops.deleted_flows) == 1  # cut once, not at every apply while it stays down


def test_keep_leaves_live_flows_alone() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    engine.apply(service(MEMBERS[:3]))
    assert ops.deleted_flows == []


def test_the_policy_is_the_listeners_as_it_is_now() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))  # applied under keep, then the pool asks to reroute
    engine.apply(service(MEMBERS[1:], live_flows=LiveFlowPolicy.REROUTE))
    assert ops.deleted_flows == [FlowMatch(L4Protocol.TCP, "10.30.1.1", 80, "10.30.0.1", 8080)]
    engine.apply(service(MEMBERS[2:]))  # back to keep: nothing more is deleted
    assert len(ops.deleted_flows) == 1


def test_removing_a_load_balancer_deletes_its_table() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(MEMBERS))
    engine.remove(LB)
    removal = ops.loaded[-1]
    assert "delete element ip lbaas dispatch { 10.30.1.1 . tcp . 80 }" in removal
    assert removal.endswith(
        "delete map ip lbaas m_0b6c51c85d51_tcp_80\ndelete chain ip lbaas lb_0b6c51c85d51\n"
    )
    assert engine.apply(service(MEMBERS)).full_reload


@pytest.mark.parametrize(
    ("algorithm", "persistence", "expected"),
    [
        (LbAlgorithm.SOURCE_IP_PORT, None, HashKey.FIVE_TUPLE),
        (MAGLEV, None, HashKey.FIVE_TUPLE),
        (LbAlgorithm.SOURCE_IP, None, HashKey.SOURCE_ADDRESS),
        (MAGLEV, PersistenceType.SOURCE_IP, HashKey.SOURCE_ADDRESS),
    ],
)
def test_algorithm_and_persistence_choose_the_hash(
    algorithm: str, persistence: PersistenceType | None, expected: HashKey
) -> None:
    assert hash_key_for(algorithm, persistence) is expected


@pytest.mark.parametrize(
    ("algorithm", "persistence", "message"),
    [
        (LbAlgorithm.ROUND_ROBIN, None, "LB algorithm ROUND_ROBIN is not supported"),
        (LbAlgorithm.LEAST_CONNECTIONS, None, "LEAST_CONNECTIONS is not supported"),
        (MAGLEV, PersistenceType.HTTP_COOKIE, "HTTP_COOKIE is not supported"),
        (LbAlgorithm.SOURCE_IP_PORT, PersistenceType.APP_COOKIE, "APP_COOKIE is not supported"),
    ],
)
def test_what_the_engine_cannot_do_is_a_400(
    algorithm: str, persistence: PersistenceType | None, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message) as raised:
        hash_key_for(algorithm, persistence)
    assert raised.value.status_code == 400


# What nft 1.0.6 prints for `nft -j list chain ip <table> balance` (one listener shown).
def test_new_flows_are_read_from_the_dispatch_counters() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    assert engine.new_flows(LB) == {}
    ops.set_flows("lb_0b6c51c85d51", "10.30.1.1", {"tcp_80": 17})
    ops.set_flows("lb_ffffffffffff", "10.30.1.2", {"tcp_80": 5})  # another load balancer
    assert engine.new_flows(LB) == {"tcp_80": 17}


def owners(ops: RecordingNftOps) -> set[str]:
    """The member addresses the last loaded table or slot update maps slots to."""
    return set(re.findall(r"\d+ : (\d+\.\d+\.\d+\.\d+) \. \d+", ops.loaded[-1]))


def test_backup_members_get_flows_only_while_no_primary_is_healthy() -> None:
    spare = (
        L4Member("spare-1", "10.30.0.91", 8080, backup=True),
        L4Member("spare-2", "10.30.0.92", 8080, backup=True),
    )
    primaries = MEMBERS[:2]
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(primaries + spare))
    assert owners(ops) == {"10.30.0.1", "10.30.0.2"}  # backups hold no slot
    one_down = (replace(primaries[0], healthy=False), primaries[1])
    engine.apply(service(one_down + spare))
    assert owners(ops) == {"10.30.0.2"}  # one primary is enough: backups still idle
    all_down = tuple(replace(m, healthy=False) for m in primaries)
    report = engine.apply(service(all_down + spare))
    assert not report.full_reload and report.moved_slots == 101
    assert owners(ops) == {"10.30.0.91", "10.30.0.92"}  # every slot to the backups
    tier = service(all_down + spare).listeners[0]
    assert set(tier.table().shares()) == {"spare-1", "spare-2"}
    engine.apply(service(primaries + spare))  # a primary back: the backups lose every slot
    assert owners(ops) == {"10.30.0.1", "10.30.0.2"}


def test_members_on_the_nodes_own_host_take_every_flow_while_one_of_them_is_healthy() -> None:
    local = (replace(MEMBERS[0], local=True), replace(MEMBERS[1], local=True))
    spare = L4Member("spare-1", "10.30.0.91", 8080, backup=True, local=True)
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service((*local, *MEMBERS[2:], spare)))
    assert owners(ops) == {"10.30.0.1", "10.30.0.2"}  # the others hold no slot here
    engine.apply(service((replace(local[0], healthy=False), local[1], *MEMBERS[2:], spare)))
    assert owners(ops) == {"10.30.0.2"}  # one local member is enough
    no_local = tuple(replace(m, healthy=False) for m in local)
    engine.apply(service((*no_local, *MEMBERS[2:], spare)))
    assert owners(ops) == {"10.30.0.3", "10.30.0.4", "10.30.0.5"}  # every primary's turn
    gone = tuple(replace(m, healthy=False) for m in (*local, *MEMBERS[2:]))
    engine.apply(service((*gone, spare)))
    assert owners(ops) == {"10.30.0.91"}  # a local backup is still only a backup
    engine.apply(service((*local, *MEMBERS[2:], spare)))
    assert owners(ops) == {"10.30.0.1", "10.30.0.2"}


def test_cut_moves_backup_flows_back_when_a_primary_returns() -> None:
    spare = L4Member("spare-1", "10.30.0.91", 8080, backup=True)
    down = replace(MEMBERS[0], healthy=False)
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(cutting((down, spare)))
    engine.apply(cutting((MEMBERS[0], spare)))
    assert ops.deleted_flows == [FlowMatch(L4Protocol.TCP, "10.30.1.1", 80, "10.30.0.91", 8080)]
