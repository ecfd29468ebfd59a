"""Reading an HAProxy 2.6 ``ring`` straight from its ``backing-file``, without a forwarder.

A ring's ``server`` forwarder costs HAProxy an applet wake-up and a send per poll loop
(~3 µs per access-log line). A ring with ``backing-file`` lives in an mmap'd file, so
logging costs HAProxy only the copy into memory when the agent reads that file itself,
read-only, every few tens of milliseconds. This module is that reader; what to do with
the lines (files, syslog) is the access-log module's business.

The file is HAProxy's ``struct ring`` (``HEADER`` bytes here) followed by the storage
area, a circular buffer of ``[readers count][varint length][payload]`` messages plus the
readers-count byte of the message not yet written. Positions are absolute (``ofs``, the
ring's history offset of its oldest byte, only grows), so a caller's saved position stays
meaningful across wraps: older than the oldest message means those bytes were lost.

There is no sequence counter: HAProxy's threads write under the ring's rwlock. A snapshot
is accepted when the lock word was free between two equal reads of (ofs, data, head);
after copying bytes out, a grown ``ofs`` beyond the copy's start means a writer may have
reused that space meanwhile, so the copy is thrown away and the read resumes at the new
``ofs`` (always a message boundary). Only x86-64-like layouts (8-byte pointers, no thread
debugging) are accepted: the header length is checked from the file size.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

#: Length of HAProxy 2.6's ``struct ring`` on a 64-bit build: what precedes the area.
HEADER = 72
#: Reading a header that a writer holds locked is retried this often before giving up.
_SNAPSHOT_TRIES = 50
_SNAPSHOT_PAUSE = 0.0002
#: A copy overtaken by the writer is retried this often in one ``read``.
_COPY_TRIES = 4
_U64 = struct.Struct("=Q")
_STATE = struct.Struct("=QQQ")  # data, head, ofs at offsets 16, 24, 32
_LOCK_AT = 56


class UnsupportedRing(Exception):
    """The file is not an HAProxy ring laid out as this module expects."""


class RingBusy(Exception):
    """No consistent header could be read: a writer held the ring the whole time."""


@dataclass(frozen=True)
class RingRead:
    """What one ``RingFile.read`` found."""

    #: Whole messages, oldest first, without a newline.
    lines: list[bytes]
    #: Absolute position to read from next time.
    end: int
    #: Bytes between the asked position and the oldest message still held (overwritten).
    lost: int


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    """HAProxy's length varint at ``buf[at]``: (value, index after it).

    Under 240 a byte is the value. Otherwise the first byte counts as is and each next
    byte adds itself shifted by 4, then 11, 18... bits, while the byte before it had its
    top bit set.
    """
    value = buf[at]
    at += 1
    if value < 240:
        return value, at
    shift = 4
    while True:
        byte = buf[at]
        at += 1
        value += byte << shift
        shift += 7
        if byte < 128:
            return value, at


def varint_length(value: int) -> int:
    """Bytes HAProxy uses to encode ``value`` as a varint."""
    if value < 240:
        return 1
    size = 2
    value = (value - 240) >> 4
    while value >= 128:
        value = (value - 128) >> 7
        size += 1
    return size


def parse(buf: bytes) -> tuple[list[bytes], int]:
    """The whole messages at the start of ``buf``: (payloads, index after the last one).

    ``buf`` starts at a message's readers-count byte and ends at or before the counter
    byte of the next message not yet written, so a message is whole when it fits in
    ``buf``; a copy cut short (a read's limit) ends with a partial message, left for the
    next read. The loop runs for every access-log line, so it is kept bare: one- and
    two-byte lengths (lines under 2,288 bytes) are decoded inline, and a line running past
    the end is taken back once after the loop rather than checked for on every line.
    """
    lines: list[bytes] = []
    append = lines.append
    stop = len(buf)
    at = size = 0
    try:
        while at < stop:
            size = buf[at + 1]
            if size < 240:
                at += 2
            else:
                second = buf[at + 2]
                if second < 128:
                    size += second << 4
                    at += 3
                else:
                    size, at = _varint(buf, at + 1)
            append(buf[at : at + size])
            at += size
    except IndexError:  # cut inside a message's counter or length: it waits, whole
        pass
    if at > stop:  # the last message was cut: take it back
        lines.pop()
        at -= size + 1 + varint_length(size)
    return lines, at


class RingFile:
    """One ring's backing file, mapped read-only; positions are absolute (see the module)."""

    def __init__(self, mapping: mmap.mmap, size: int, inode: int) -> None:
        self._map = mapping
        self._size = size
        self._inode = inode

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RingFile:
        """Map ``path`` read-only; ``UnsupportedRing`` unless it is laid out as a ring."""
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            if info.st_size <= HEADER:
                raise UnsupportedRing(f"{os.fspath(path)}: {info.st_size} bytes, no ring fits")
            mapping = mmap.mmap(fd, info.st_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        finally:
            os.close(fd)  # the mapping keeps the file
        size = _U64.unpack_from(mapping, 0)[0]
        if size + HEADER != info.st_size:
            mapping.close()
            raise UnsupportedRing(
                f"{os.fspath(path)}: its header says an area of {size} bytes, not the "
                f"{info.st_size} - {HEADER} of an HAProxy 2.6 ring file of this size"
            )
        data, head, _ = _STATE.unpack_from(mapping, 16)
        if data > size or head >= size:  # in range even while a writer changes them
            mapping.close()
            raise UnsupportedRing(
                f"{os.fspath(path)}: header out of range (data {data}, head {head}, "
                f"area {size}): not a ring"
            )
        return cls(mapping, size, info.st_ino)

    @property
    def inode(self) -> int:
        """``st_ino`` of the file: the same ring under another name (``.bak``, deleted)."""
        return self._inode

    def close(self) -> None:
        self._map.close()

    def __enter__(self) -> RingFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def bounds(self) -> tuple[int, int]:
        """(oldest, end): where the oldest message starts and where the next will start.

        Raises ``RingBusy`` when writers held the ring through every attempt.
        """
        ofs, data, _ = self._snapshot()
        return ofs, ofs + max(data - 1, 0)

    def read(self, position: int, limit: int = 8 << 20) -> RingRead:
        """The whole messages from ``position`` on, about ``limit`` bytes of them at most.

        Older than the oldest message: the bytes in between are ``lost``. Beyond the
        ring's end (a position kept for another ring): read from the oldest, nothing lost.
        Writers holding the ring through every attempt: nothing read, ``end`` unchanged.
        """
        lost = 0
        for _ in range(_COPY_TRIES):
            try:
                ofs, data, head = self._snapshot()
            except RingBusy:
                break
            last = ofs + max(data - 1, 0)  # the counter byte of the next message
            if position > ofs + data:
                position = ofs
            elif position > last:  # one past the counter byte: not a message start
                position = last
            elif position < ofs:
                lost += ofs - position
                position = ofs
            count = min(last - position, limit)
            if count < last - position:
                count = max(count, self._message_length(head, ofs, position, last))
            lines, used = parse(self._copy(head, ofs, position, count))
            overtaken = _U64.unpack_from(self._map, 32)[0]  # the writer reused the copied space?
            if overtaken <= position:
                return RingRead(lines, position + used, lost)
            lost += overtaken - position
            position = overtaken
        return RingRead([], position, lost)

    def messages(self, position: int) -> Iterator[bytes]:
        """Every whole message from ``position`` to the current end (for tools and tests)."""
        while True:
            got = self.read(position)
            if not got.lines:
                return
            yield from got.lines
            position = got.end

    def _snapshot(self) -> tuple[int, int, int]:
        """(ofs, data, head) read twice around a free lock word, equal both times."""
        for _ in range(_SNAPSHOT_TRIES):
            data, head, ofs = _STATE.unpack_from(self._map, 16)
            lock = _U64.unpack_from(self._map, _LOCK_AT)[0]
            if lock == 0 and _STATE.unpack_from(self._map, 16) == (data, head, ofs):
                if data > self._size or head >= self._size:
                    raise UnsupportedRing(
                        f"ring header out of range: data {data}, head {head}, area {self._size}"
                    )
                return ofs, data, head
            time.sleep(_SNAPSHOT_PAUSE)
        raise RingBusy(f"the ring stayed locked or changing over {_SNAPSHOT_TRIES} reads")

    def _copy(self, head: int, ofs: int, position: int, count: int) -> bytes:
        """``count`` bytes from absolute ``position``, joined across the area's wrap."""
        at = (head + position - ofs) % self._size
        if at + count <= self._size:
            return self._map[HEADER + at : HEADER + at + count]
        first = self._size - at
        return (
            self._map[HEADER + at : HEADER + self._size]
            + self._map[HEADER : HEADER + count - first]
        )

    def _message_length(self, head: int, ofs: int, position: int, last: int) -> int:
        """Bytes of the message at ``position``, so a read below one message still moves."""
        start = self._copy(head, ofs, position, min(last - position, 8))
        try:
            size, after = _varint(start, 1)
        except IndexError:
            return last - position
        return after + size


def worker_rings(pid: int, prefix: str) -> list[str]:
    """Paths reaching the ring files ``pid`` has mapped whose name starts with ``prefix``.

    HAProxy renames a backing file to ``<path>.bak`` when a configuration naming it is
    parsed again (a reload) and the file may be unlinked later; the mapping's entry under
    ``/proc/<pid>/map_files/`` still opens it (as root) in every case. A process that is
    gone has none.
    """
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="surrogateescape") as maps:
            rows = maps.read().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return []
    paths: list[str] = []
    for row in rows:
        fields = row.split(maxsplit=5)
        if len(fields) < 6 or fields[1][3:4] != "s":  # a ring is a shared mapping
            continue
        if fields[5].removesuffix(" (deleted)").startswith(prefix):
            path = f"/proc/{pid}/map_files/{fields[0]}"
            if path not in paths:
                paths.append(path)
    return paths
