"""Element changes sent to the kernel as one nf_tables netlink batch, without libnftables.

Why (issue 34, docs/architecture.md, "The L4 engine"): nftables 1.0.6 reads the definition
of every chain and set of the namespace before any command that adds or deletes an element
or deletes an object (~50 ms at 10,000 load balancers), to evaluate the command's text.
A slot update and a removal name only objects the engine itself created, whose types it
knows, so their messages can be built here and sent as they are: the kernel applies the
batch whole or refuses it whole (and then the engine falls back to libnftables' checked
full load, as for any refused update).

Encodings (``nft --debug=netlink`` shows the same bytes): a slot is a 32-bit integer in
host order (``numgen``'s register); ``ip daddr . th dport`` is the address then the port,
both in network order, each field padded to 4 bytes; ``ipv4_addr . inet_proto .
inet_service`` likewise. Only ``table ip`` (family NFPROTO_IPV4).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import socket
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

NETLINK_NETFILTER = 12
_NFPROTO_IPV4 = 2
_SUBSYS_NFTABLES = 10
_BATCH_BEGIN, _BATCH_END = 16, 17  # NFNL_MSG_BATCH_*
_NEWSETELEM, _DELSETELEM, _DELRULE, _DELCHAIN, _DELSET, _DELOBJ = 12, 14, 8, 5, 11, 20
_REQUEST, _ACK, _CREATE = 0x1, 0x4, 0x400
_NESTED = 0x8000
_ERROR, _DONE = 2, 3  # NLMSG_ERROR, NLMSG_DONE
_DUMP, _DUMP_INTERRUPTED = 0x300, 0x10  # NLM_F_DUMP, NLM_F_DUMP_INTR
_DUMP_BUFFER = 1 << 16  # the kernel's dump messages stay under 32 KB
_OBJ_CT_TIMEOUT = 7  # NFT_OBJECT_CT_TIMEOUT
_NFT_JUMP = -3
_PROTOCOLS = {"tcp": 6, "udp": 17, "sctp": 132}
_SO_SNDBUFFORCE = 32
_SEND_BUFFER = 16 << 20
_ELEMENTS_MAX = 60000


def _attr(kind: int, payload: bytes) -> bytes:
    header = struct.pack("=HH", 4 + len(payload), kind)
    return header + payload + b"\0" * (-len(payload) % 4)


def string_attr(kind: int, text: str) -> bytes:
    return _attr(kind, text.encode() + b"\0")


def _nest(kind: int, *parts: bytes) -> bytes:
    return _attr(kind | _NESTED, b"".join(parts))


@functools.lru_cache(maxsize=64)
def _element_heads(key_size: int, value_size: int) -> tuple[bytes, bytes, bytes]:
    """What goes before, between and after a key and a value of these sizes in an
    element ``ELEM(KEY(VALUE key), DATA(VALUE value))``: the same bytes ``_nest`` and
    ``_attr`` build, computed once (a restore adds millions of slot elements)."""
    key_pad, value_pad = -key_size % 4, -value_size % 4
    key_nest = 8 + key_size + key_pad
    data_nest = 8 + value_size + value_pad
    head = struct.pack(
        "=HHHHHH", 4 + key_nest + data_nest, 1 | _NESTED, key_nest, 1 | _NESTED, 4 + key_size, 1
    )
    middle = b"\0" * key_pad + struct.pack("=HHHH", data_nest, 2 | _NESTED, 4 + value_size, 1)
    return head, middle, b"\0" * value_pad


def _verdict_jump(chain: str) -> bytes:
    """NFTA_VERDICT_CODE (NFT_JUMP, network order) and NFTA_VERDICT_CHAIN."""
    return _attr(1, struct.pack(">i", _NFT_JUMP)) + string_attr(2, chain)


def slot_key(slot: int) -> bytes:
    return struct.pack("=I", slot)


@functools.lru_cache(maxsize=4096)
def target_value(address: str, port: int) -> bytes:
    """``address . port`` as a slot map holds it (a map's thousand slots share a few)."""
    return ipaddress.IPv4Address(address).packed + struct.pack(">H", port) + b"\0\0"


def dispatch_key(vip: str, protocol: str, port: int) -> bytes:
    proto = struct.pack("=B", _PROTOCOLS[protocol]) + b"\0\0\0"
    return ipaddress.IPv4Address(vip).packed + proto + struct.pack(">H", port) + b"\0\0"


def address_key(address: str) -> bytes:
    return ipaddress.IPv4Address(address).packed


@dataclass
class Batch:
    """The messages of one transaction on ``table ip <table>``, in order."""

    table: str
    messages: list[tuple[int, int, bytes]] = field(default_factory=list)

    def _table(self) -> bytes:
        return string_attr(1, self.table)  # NFTA_*_TABLE is 1 for every object kind

    def delete_elements(self, set_name: str, keys: Iterable[bytes]) -> None:
        elements = [_nest(1, _nest(1, _attr(1, key))) for key in keys]  # ELEM(KEY(VALUE))
        self._elements(_DELSETELEM, 0, set_name, elements)

    def add_elements(self, set_name: str, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        """``key : value`` elements (a data map)."""
        elements = []
        for key, value in pairs:
            head, middle, tail = _element_heads(len(key), len(value))
            elements.append(head + key + middle + value + tail)
        self._elements(_NEWSETELEM, _CREATE, set_name, elements)

    def add_jumps(self, set_name: str, pairs: Iterable[tuple[bytes, str]]) -> None:
        """``key : jump <chain>`` elements (a verdict map); the map's own expressions (a
        ``counter``) are given to each new element by the kernel, as to nft's."""
        elements = [
            _nest(1, _nest(1, _attr(1, key)), _nest(2, _nest(2, _verdict_jump(chain))))
            for key, chain in pairs
        ]
        self._elements(_NEWSETELEM, _CREATE, set_name, elements)

    def add_keys(self, set_name: str, keys: Iterable[bytes]) -> None:
        """Elements of a plain set (no data)."""
        elements = [_nest(1, _nest(1, _attr(1, key))) for key in keys]
        self._elements(_NEWSETELEM, _CREATE, set_name, elements)

    def _elements(self, kind: int, flags: int, set_name: str, elements: list[bytes]) -> None:
        """As many messages as the elements need: an attribute's length is 16 bits, so a
        message's list of elements stays under 64 KB (still one transaction)."""
        chunks: list[list[bytes]] = [[]]
        size = 0
        for element in elements:
            if chunks[-1] and size + len(element) > _ELEMENTS_MAX:
                chunks.append([])
                size = 0
            chunks[-1].append(element)
            size += len(element)
        head = self._table() + string_attr(2, set_name)
        for chunk in chunks:
            if chunk:
                self.messages.append((kind, flags, head + _nest(3, *chunk)))

    def flush_chain(self, chain: str) -> None:
        self.messages.append((_DELRULE, 0, self._table() + string_attr(2, chain)))

    def delete_chain(self, chain: str) -> None:
        self.messages.append((_DELCHAIN, 0, self._table() + string_attr(3, chain)))

    def delete_set(self, name: str) -> None:
        self.messages.append((_DELSET, 0, self._table() + string_attr(2, name)))

    def delete_ct_timeout(self, name: str) -> None:
        body = self._table() + string_attr(2, name) + _attr(3, struct.pack(">I", _OBJ_CT_TIMEOUT))
        self.messages.append((_DELOBJ, 0, body))


class NetlinkRefused(RuntimeError):
    """The kernel refused the batch (nothing of it applied), or did not answer."""


def _message(kind: int, flags: int, seq: int, body: bytes, res_id: int = 0) -> bytes:
    generic = struct.pack("=BBH", _NFPROTO_IPV4, 0, socket.htons(res_id))
    length = 16 + len(generic) + len(body)
    return struct.pack("=IHHII", length, kind, flags, seq, 0) + generic + body


def encode(batch: Batch, first_seq: int) -> tuple[bytes, list[int]]:
    """The datagram for ``batch`` and the sequence numbers whose acks to wait for."""
    parts = [_message(_BATCH_BEGIN, _REQUEST, first_seq, b"", _SUBSYS_NFTABLES)]
    acked = []
    for offset, (kind, flags, body) in enumerate(batch.messages, start=1):
        seq = first_seq + offset
        parts.append(_message(_SUBSYS_NFTABLES << 8 | kind, _REQUEST | _ACK | flags, seq, body))
        acked.append(seq)
    end = first_seq + len(batch.messages) + 1
    parts.append(_message(_BATCH_END, _REQUEST, end, b"", _SUBSYS_NFTABLES))
    return b"".join(parts), acked


class NetlinkSocket:
    """One nfnetlink socket, in the namespace of the thread that opens it."""

    def __init__(self, timeout: float = 10.0) -> None:
        self._socket = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self._socket.settimeout(timeout)
        # A batch is one datagram, which must fit the send buffer: a whole 16411-slot
        # map moved is ~1 MB (the default buffer takes ~200 KB). FORCE needs
        # CAP_NET_ADMIN, which programming nftables needs anyway; without it, the default.
        with contextlib.suppress(OSError):
            self._socket.setsockopt(socket.SOL_SOCKET, _SO_SNDBUFFORCE, _SEND_BUFFER)
        self._socket.bind((0, 0))
        self._seq = int.from_bytes(os.urandom(2), "big") << 8

    def close(self) -> None:
        self._socket.close()

    def send(self, batch: Batch) -> None:
        """Apply ``batch`` as one transaction. Raises NetlinkRefused with the kernel's
        error (``os.strerror``) when it refuses any message of it."""
        if not batch.messages:
            return
        datagram, acked = encode(batch, self._seq)
        self._seq += len(batch.messages) + 2
        try:
            self._socket.send(datagram)
            errors = self._acks(set(acked))
        except OSError as exc:
            raise NetlinkRefused(f"nf_tables netlink: {exc}") from exc
        if errors:
            raise NetlinkRefused("; ".join(sorted(set(errors))))

    def dump(self, kind: int, body: bytes) -> Iterator[bytes]:
        """The attributes (after the nfgenmsg header) of each message of one nf_tables dump
        request ``kind`` (``NFT_MSG_GET*``) with ``body``, as they arrive: a dump of ten
        thousand maps' elements is never held whole. Raises NetlinkRefused with the
        kernel's error (``ENOENT``: no such table or set)."""
        seq = self._seq
        self._seq += 1
        request = _message(_SUBSYS_NFTABLES << 8 | kind, _REQUEST | _DUMP, seq, body)
        try:
            self._socket.send(request)
            while True:
                data = self._socket.recv(_DUMP_BUFFER)
                offset = 0
                while offset + 16 <= len(data):
                    length, kind_got, flags, seq_got, _pid = struct.unpack_from(
                        "=IHHII", data, offset
                    )
                    end = offset + max(16, length)
                    if seq_got == seq:
                        if flags & _DUMP_INTERRUPTED:  # the table changed meanwhile
                            raise NetlinkRefused("nf_tables dump: interrupted by a change")
                        if kind_got == _DONE:
                            return
                        if kind_got == _ERROR:
                            (code,) = struct.unpack_from("=i", data, offset + 16)
                            raise NetlinkRefused(f"nf_tables dump: {os.strerror(-code)}")
                        yield data[offset + 20 : end]
                    offset = (end + 3) & ~3
        except OSError as exc:
            raise NetlinkRefused(f"nf_tables dump: {exc}") from exc

    def _acks(self, waiting: set[int]) -> list[str]:
        """Read until every message is acknowledged, or the first refusal (the kernel
        aborts the batch there and acknowledges nothing after it)."""
        errors: list[str] = []
        while waiting and not errors:
            data = self._socket.recv(65536)
            for seq, code in _replies(data):
                if seq not in waiting:  # a late answer to an earlier batch
                    continue
                waiting.discard(seq)
                if code:
                    errors.append(os.strerror(-code))
        return errors


def _replies(data: bytes) -> Sequence[tuple[int, int]]:
    """(sequence number, error code) of each NLMSG_ERROR (an ack is code 0) in ``data``."""
    found = []
    offset = 0
    while offset + 16 <= len(data):
        length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", data, offset)
        if kind == _ERROR:
            (code,) = struct.unpack_from("=i", data, offset + 16)
            found.append((seq, code))
        offset += max(16, (length + 3) & ~3)
    return found
