"""``nft_steps``: a slot update and a removal as data (sent as netlink by ``LibNftOps``)."""

from __future__ import annotations

from lbaas.l4 import nft, nft_steps
from lbaas.l4.host.lib_ops import batch_of
from lbaas.l4.host.nft_netlink import encode
from lbaas.l4.nft_steps import Step, Verb
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service

LB_ID = "5eed0000-0000-4000-8000-000000000001"


def test_a_slot_update_deletes_then_adds_the_moved_slots() -> None:
    steps = nft_steps.slot_update(LB_ID, "tcp_80", [(9, "10.0.0.2 . 80"), (2, "10.0.0.3 . 81")])
    name = nft.map_name(LB_ID, "tcp_80")
    assert steps == [
        Step(Verb.DELETE_SLOTS, name, keys=("2", "9")),
        Step(Verb.ADD_SLOTS, name, slots=((2, "10.0.0.3", 81), (9, "10.0.0.2", 80))),
    ]
    assert nft_steps.slot_update(LB_ID, "tcp_80", []) == []


def test_a_removal_empties_dispatch_and_the_chain_before_deleting_objects() -> None:
    members = (L4Member("m", "10.0.0.2", 80),)
    tcp = L4Listener(L4Protocol.TCP, 80, members, allowed_cidrs=("10.1.0.0/16",))
    udp = L4Listener(L4Protocol.UDP, 53, members, idle_timeout=5)
    service = L4Service(LB_ID, "10.9.0.1", (tcp, udp), entry=True)
    steps = nft_steps.delete(LB_ID, nft.footprint(service))
    verbs = [step.verb for step in steps]
    assert verbs[:3] == [Verb.DELETE_DISPATCH, Verb.DELETE_ENTRY, Verb.FLUSH_CHAIN]
    assert verbs[-1] is Verb.DELETE_CHAIN
    assert sorted(verbs[3:-1]) == sorted(
        [Verb.DELETE_SET, Verb.DELETE_SET, Verb.DELETE_SET, Verb.DELETE_CT_TIMEOUT]
    )
    assert steps[0].keys == ("10.9.0.1 . tcp . 80", "10.9.0.1 . udp . 53")
    # One message per step, framed by the batch's begin and end, each acknowledged.
    datagram, acked = encode(batch_of(steps), 100)
    assert acked == list(range(101, 101 + len(steps)))
    assert len(datagram) % 4 == 0
