"""The real probes: TCP, UDP-CONNECT, HTTP and PING, as coroutines on one event loop.

* TCP: the connection is established (then closed).
* UDP-CONNECT: Octavia's meaning: a datagram is sent from a connected socket and the member
  fails only if the kernel reports an ICMP error (port or host unreachable) within half
  the timeout (at most a second); an answer, or silence, passes. Like Octavia's, it cannot
  tell a silent dead host from a live one that does not answer.
* HTTP: one request (``Connection: close``), the status of the answer's first line in
  ``expected_codes``.
* PING: an ICMP echo from a socket of our own (an unprivileged ICMP datagram socket where
  ``net.ipv4.ping_group_range`` allows it, else a raw socket, which needs root as the agent
  runs), passing on an echo reply from the member. No ``ping`` binary: a process per probe
  per member would cost far more than a socket.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import struct

from lbaas.l4.health.base import Prober
from lbaas.l4.health.monitor import ProbeType, Target, expected_status

_UDP_WAIT_CAP = 1.0
_ICMP_ECHO_REQUEST, _ICMP_ECHO_REPLY = 8, 0
_sequence = itertools.count(1)


class NetworkProber(Prober):
    async def probe(self, target: Target) -> bool:
        kind = target.monitor.type
        if kind is ProbeType.TCP:
            return await tcp_probe(target)
        if kind is ProbeType.UDP_CONNECT:
            return await udp_connect_probe(target)
        if kind is ProbeType.HTTP:
            return await http_probe(target)
        return await ping_probe(target)


async def tcp_probe(target: Target) -> bool:
    _, writer = await asyncio.open_connection(target.address, target.port)
    writer.close()
    await writer.wait_closed()
    return True


class _UdpOutcome(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        if not self.done.done():
            self.done.set_result(True)

    def error_received(self, exc: Exception) -> None:  # ICMP unreachable, reported by Linux
        if not self.done.done():
            self.done.set_result(False)


async def udp_connect_probe(target: Target) -> bool:
    loop = asyncio.get_running_loop()
    transport, outcome = await loop.create_datagram_endpoint(
        _UdpOutcome, remote_addr=(target.address, target.port)
    )
    try:
        transport.sendto(b"\n")
        wait = min(target.monitor.timeout / 2, _UDP_WAIT_CAP)
        try:
            return await asyncio.wait_for(asyncio.shield(outcome.done), wait)
        except TimeoutError:
            return True  # no ICMP error: the port is open (or the host silent)
    finally:
        transport.close()


async def http_probe(target: Target) -> bool:
    monitor = target.monitor
    reader, writer = await asyncio.open_connection(target.address, target.port)
    try:
        host = monitor.domain_name or target.address
        version = "1.1" if monitor.http_version >= 1.1 else "1.0"
        request = (
            f"{monitor.http_method} {monitor.url_path} HTTP/{version}\r\n"
            f"Host: {host}\r\nUser-Agent: lbaas-health\r\nConnection: close\r\n\r\n"
        )
        writer.write(request.encode("latin-1"))
        await writer.drain()
        status_line = await reader.readline()
    finally:
        writer.close()
    parts = status_line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return False
    return expected_status(monitor.expected_codes, int(parts[1]))


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def echo_request(ident: int, sequence: int, payload: bytes) -> bytes:
    header = struct.pack("!BBHHH", _ICMP_ECHO_REQUEST, 0, 0, ident, sequence)
    checksum = _checksum(header + payload)
    return struct.pack("!BBHHH", _ICMP_ECHO_REQUEST, 0, checksum, ident, sequence) + payload


def _icmp_socket() -> tuple[socket.socket, bool]:
    """An ICMP socket and whether it is raw (raw sockets receive the IP header too)."""
    try:
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP), False
    except PermissionError:
        return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), True


def _is_our_reply(packet: bytes, raw: bool, ident: int, sequence: int, payload: bytes) -> bool:
    if raw:
        packet = packet[(packet[0] & 0x0F) * 4 :]
    if len(packet) < 8 or packet[0] != _ICMP_ECHO_REPLY:
        return False
    _, _, _, got_ident, got_sequence = struct.unpack("!BBHHH", packet[:8])
    # A datagram ICMP socket has its id rewritten by the kernel (and only sees its own
    # replies); a raw one sees every reply, so the id must match too.
    return got_sequence == sequence and packet[8:] == payload and (not raw or got_ident == ident)


async def ping_probe(target: Target) -> bool:
    loop = asyncio.get_running_loop()
    sock, raw = _icmp_socket()
    sock.setblocking(False)
    ident, sequence = os.getpid() & 0xFFFF, next(_sequence) & 0xFFFF
    payload = f"lbaas-health {target.key}".encode()[:48]
    try:
        await loop.sock_sendto(sock, echo_request(ident, sequence, payload), (target.address, 0))
        while True:
            packet, (source, _) = await loop.sock_recvfrom(sock, 2048)
            if source == target.address and _is_our_reply(packet, raw, ident, sequence, payload):
                return True
    finally:
        sock.close()
