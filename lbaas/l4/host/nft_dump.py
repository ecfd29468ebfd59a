"""What the kernel holds of ``table ip lbaas``, read as raw nf_tables netlink dumps.

Why (issue 34, docs/architecture.md, "The L4 engine"): an agent that restarts on a node
holding thousands of load balancers compares what the kernel holds with its specs and
changes only what differs (``lbaas.l4.adoption``). libnftables cannot list one slot map
without reading every set of the namespace, elements included, and answers in text or
JSON that grows with the node (hundreds of megabytes at 10,000 load balancers of 1,021
slots). A dump request names one table or one set, and its answer arrives in messages of
at most 32 KB that are parsed as they come and dropped.

Three reads: the names of the namespace's tables; the comment of every rule of the table,
by chain, in order (``rule_comments``; a rule's comment is its ``NFTA_RULE_USERDATA``,
libnftnl's type-length-value records, type 0); and one slot map's elements as ``address .
port`` by slot (``slot_map``). All run on a ``NetlinkSocket`` opened in the table's
namespace.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Iterator

from lbaas.l4.host.nft_netlink import NetlinkSocket, string_attr

_GETTABLE, _GETRULE, _GETSETELEM = 1, 7, 13  # NFT_MSG_GET*
_TABLE_NAME = 1  # NFTA_TABLE_NAME
_RULE_CHAIN, _RULE_USERDATA = 2, 7  # NFTA_RULE_*
_ELEM_LIST_ELEMENTS = 3  # NFTA_SET_ELEM_LIST_ELEMENTS
_ELEM_KEY, _ELEM_DATA = 1, 2  # NFTA_SET_ELEM_*
_DATA_VALUE = 1  # NFTA_DATA_VALUE
_COMMENT = 0  # NFTNL_UDATA_RULE_COMMENT
_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER
# A slot map's element as the kernel dumps it, 32 bytes: the element's nest, the key's
# nest and value (the slot, 4 bytes, host order), the data's nest and value (address and
# port, each padded to 4 bytes). Checked per message; anything else takes the slow parse.
# The kernel nests without NLA_F_NESTED in its dumps (``nla_nest_start_noflag``); a
# request's nests have it: both shapes pass.
_SLOT_SHAPES = tuple(
    (struct.pack("=HHHHHH", 32, 1 | flag, 12, 1 | flag, 8, 1),
     struct.pack("=HHHH", 16, 2 | flag, 12, 1))
    for flag in (0, 0x8000)
)  # fmt: skip


def attributes(data: bytes | memoryview) -> Iterator[tuple[int, memoryview]]:
    """(type, payload) of each netlink attribute in ``data``."""
    view = memoryview(data)
    offset = 0
    while offset + 4 <= len(view):
        length, kind = struct.unpack_from("=HH", view, offset)
        if length < 4:
            return
        yield kind & _TYPE_MASK, view[offset + 4 : offset + length]
        offset += (length + 3) & ~3


def comment_of(userdata: bytes | memoryview) -> str:
    """The comment in a rule's user data ("" if none)."""
    view = bytes(userdata)
    offset = 0
    while offset + 2 <= len(view):
        kind, length = view[offset], view[offset + 1]
        if kind == _COMMENT:
            return view[offset + 2 : offset + 2 + length].rstrip(b"\0").decode(errors="replace")
        offset += 2 + length
    return ""


def rule_comments(messages: Iterable[bytes]) -> dict[str, tuple[str, ...]]:
    """The comments of the rules of each chain, in the order the dump gives (the chain's)."""
    found: dict[str, list[str]] = {}
    for message in messages:
        chain, comment = "", ""
        for kind, payload in attributes(message):
            if kind == _RULE_CHAIN:
                chain = bytes(payload).rstrip(b"\0").decode()
            elif kind == _RULE_USERDATA:
                comment = comment_of(payload)
        found.setdefault(chain, []).append(comment)
    return {chain: tuple(comments) for chain, comments in found.items()}


def slot_elements(messages: Iterable[bytes]) -> list[tuple[int, bytes]]:
    """(slot, 8-byte value) of every element of a slot map's dump."""
    pairs: list[tuple[int, bytes]] = []
    for message in messages:
        for kind, payload in attributes(message):
            if kind == _ELEM_LIST_ELEMENTS:
                pairs += _fixed(bytes(payload)) or list(_parsed(payload))
    return pairs


def _fixed(elements: bytes) -> list[tuple[int, bytes]] | None:
    """The elements if each is the 32-byte shape (checked column by column, in C), else
    None: a few strided slices instead of a Python step per attribute."""
    count, rest = divmod(len(elements), 32)
    if rest or not count or not any(_shaped(elements, count, *shape) for shape in _SLOT_SHAPES):
        return None
    words = memoryview(elements).cast("I")
    values = [elements[start : start + 8] for start in range(24, len(elements), 32)]
    return list(zip(words[3::8].tolist(), values, strict=True))


def _shaped(elements: bytes, count: int, head: bytes, data: bytes) -> bool:
    """Whether every 32-byte element of ``elements`` starts with ``head`` and has ``data``
    at byte 16 (one strided slice per header byte)."""
    columns = (*enumerate(head), *enumerate(data, 16))
    return all(elements[offset::32] == bytes((byte,)) * count for offset, byte in columns)


def _parsed(elements: bytes | memoryview) -> Iterator[tuple[int, bytes]]:
    for _kind, element in attributes(elements):
        key, value = None, b""
        for kind, payload in attributes(element):
            inner = dict(attributes(payload))
            if kind == _ELEM_KEY and _DATA_VALUE in inner:
                key = struct.unpack("=I", inner[_DATA_VALUE][:4])[0]
            elif kind == _ELEM_DATA and _DATA_VALUE in inner:
                value = bytes(inner[_DATA_VALUE])
        if key is not None:
            yield key, value


def slot_values(pairs: Iterable[tuple[int, bytes]]) -> list[str | None]:
    """``address . port`` by slot (None: no element), as long as the largest slot + 1."""
    pairs = list(pairs)
    text: dict[bytes, str] = {}
    for _slot, value in pairs:
        if value not in text:
            port = int.from_bytes(value[4:6], "big")
            text[value] = f"{socket.inet_ntoa(value[:4])} . {port}"
    slots: list[str | None] = [None] * (1 + max((slot for slot, _ in pairs), default=-1))
    for slot, value in pairs:
        slots[slot] = text[value]
    return slots


def read_rule_comments(netlink: NetlinkSocket, table: str) -> dict[str, tuple[str, ...]]:
    """The comments of every rule of ``table ip <table>``, by chain."""
    return rule_comments(netlink.dump(_GETRULE, string_attr(1, table)))


def read_slot_map(netlink: NetlinkSocket, table: str, name: str) -> list[str | None]:
    """The slot map ``name``'s values by slot. Raises NetlinkRefused (ENOENT: no such map)."""
    body = string_attr(1, table) + string_attr(2, name)
    return slot_values(slot_elements(netlink.dump(_GETSETELEM, body)))


def read_table_names(netlink: NetlinkSocket) -> list[str]:
    """The names of the namespace's ``ip`` tables (``nft list tables`` makes nftables 1.0.6
    read every set's elements first: 2.7 s and 300 MB at 300 load balancers)."""
    names = []
    for message in netlink.dump(_GETTABLE, b""):
        for kind, payload in attributes(message):
            if kind == _TABLE_NAME:
                names.append(bytes(payload).rstrip(b"\0").decode())
    return names
