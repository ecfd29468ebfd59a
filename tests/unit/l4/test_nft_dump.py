"""Parsing nf_tables dumps (``host/nft_dump.py``): messages built as the kernel sends them.

A slot map's elements arrive in hash order, 32 bytes each (the fast, column-checked parse),
or with attributes of other lengths (the slow parse); a rule's comment is a record of
its user data. The real kernel's answers are read in ``tests/e2e/l4/test_restore_adopt.py``.
"""

from __future__ import annotations

import struct

from lbaas.l4.host.nft_dump import rule_comments, slot_elements, slot_values
from lbaas.l4.host.nft_netlink import (
    Batch,
    _attr,
    _element_heads,
    _nest,
    slot_key,
    string_attr,
    target_value,
)


def elements_message(pairs: list[tuple[int, str, int]]) -> bytes:
    """A dump message of a slot map's elements (the body a NEWSETELEM request also has)."""
    batch = Batch("lbaas")
    batch.add_elements("m_x_tcp_80", ((slot_key(s), target_value(a, p)) for s, a, p in pairs))
    (message,) = batch.messages
    return message[2]


def test_elements_in_hash_order_come_back_by_slot() -> None:
    first = elements_message([(2, "10.0.0.2", 80), (0, "10.0.0.1", 8080)])
    second = elements_message([(1, "10.0.0.2", 80), (4, "192.168.1.9", 65535)])
    values = slot_values(slot_elements([first, second]))
    assert values == [
        "10.0.0.1 . 8080",
        "10.0.0.2 . 80",
        "10.0.0.2 . 80",
        None,
        "192.168.1.9 . 65535",
    ]


def test_elements_of_another_shape_take_the_slow_parse() -> None:
    message = elements_message([(3, "10.0.0.3", 443)])
    # An element with a flags attribute (8 bytes more): no longer the 32-byte shape.
    head, elements = message[:-36], message[-36:]
    element = elements[4:]
    flags = struct.pack("=HHI", 8, 3, 0)
    longer = struct.pack("=HH", 4 + len(element) + len(flags), 0x8001) + element[4:] + flags
    nest = struct.pack("=HH", 4 + len(longer), 0x8003) + longer
    assert slot_values(slot_elements([head + nest])) == [None, None, None, "10.0.0.3 . 443"]


def test_an_empty_map_has_no_slots() -> None:
    assert slot_values(slot_elements([])) == []


def rule_message(chain: str, comment: str | None) -> bytes:
    body = string_attr(1, "lbaas") + string_attr(2, chain) + struct.pack("=HHQ", 12, 3, 7)
    if comment is not None:
        text = comment.encode() + b"\0"
        userdata = bytes((0, len(text))) + text
        body += struct.pack("=HH", 4 + len(userdata), 7) + userdata + b"\0" * (-len(userdata) % 4)
    return body


def test_rule_comments_by_chain_in_order() -> None:
    messages = [
        rule_message("lb_a", "tcp_80 d1"),
        rule_message("prerouting", None),
        rule_message("lb_a", "udp_53 d1"),
        rule_message("lb_b", "tcp_80 d2"),
    ]
    assert rule_comments(messages) == {
        "lb_a": ("tcp_80 d1", "udp_53 d1"),
        "prerouting": ("",),
        "lb_b": ("tcp_80 d2",),
    }


def test_elements_from_cached_headers_are_the_nested_encoding() -> None:
    for key, value in ((slot_key(5), target_value("10.0.0.1", 80)), (b"\1\2\3", b"\4\5")):
        head, middle, tail = _element_heads(len(key), len(value))
        assert head + key + middle + value + tail == _nest(
            1, _nest(1, _attr(1, key)), _nest(2, _attr(1, value))
        )
