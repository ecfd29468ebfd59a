"""Dropping blocked sources in the kernel, with a classic BPF filter on the UDP socket.

Refusing a blocked source in Python still costs a ``recvfrom`` per datagram; a flooding
socket on the same host sends faster than one Python thread receives, so the socket
buffer fills and the kernel drops genuine heartbeats with the forged ones. A socket
filter (``SO_ATTACH_FILTER``, no privilege needed) runs before the datagram is queued:
the sources the throttle blocked are dropped there and never take buffer space.

On a UDP socket the filter sees the packet from its UDP header (offset 0: the source
port) and reaches the IP header through ``SKF_NET_OFF`` (IPv4 source address at 12).
Each source is five instructions with jumps that stay inside it. IPv4 only; an IPv6
socket keeps the throttle's refusal in Python.
"""

from __future__ import annotations

import ctypes
import ipaddress
import socket
import struct
from collections.abc import Iterable

MAX_FILTERED = 64
"""Sources dropped in the kernel at once; the throttle refuses the others in Python."""

_SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)
_SO_DETACH_FILTER = getattr(socket, "SO_DETACH_FILTER", 27)
_SKF_NET_OFF = -0x100000
_LD_H_ABS, _LD_W_ABS, _JEQ_K, _RET_K = 0x28, 0x20, 0x15, 0x06
_DROP, _ACCEPT = 0, 0xFFFFFFFF


def _program(sources: Iterable[tuple[str, int]]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) instructions dropping ``sources``, accepting everything else."""
    instructions = []
    for address, port in sources:
        instructions += [
            (_LD_H_ABS, 0, 0, 0),
            (_JEQ_K, 0, 3, port),
            (_LD_W_ABS, 0, 0, (_SKF_NET_OFF + 12) & 0xFFFFFFFF),
            (_JEQ_K, 0, 1, int(ipaddress.IPv4Address(address))),
            (_RET_K, 0, 0, _DROP),
        ]
    return [*instructions, (_RET_K, 0, 0, _ACCEPT)]


def drop_sources(sock: socket.socket, sources: Iterable[tuple[str, int]]) -> int:
    """Make ``sock`` drop datagrams from ``sources`` (IPv4 address, port) in the kernel,
    replacing the previous filter; returns how many are dropped (0 detaches it)."""
    if sock.family != socket.AF_INET:
        return 0
    chosen = [source for source in sources if _ipv4(source[0])][:MAX_FILTERED]
    if not chosen:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
        except OSError:  # ENOENT: no filter was attached
            pass
        return 0
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in _program(chosen))
    buffer = ctypes.create_string_buffer(code)
    # struct sock_fprog {unsigned short len; struct sock_filter *filter;}; the kernel
    # copies the program during setsockopt, so ``buffer`` need not outlive the call.
    fprog = struct.pack("HL", len(code) // 8, ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
    return len(chosen)


def _ipv4(address: str) -> bool:
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return True
