"""Gratuitous ARP and unsolicited NA: tell a link's neighbours where an address is now.

A SINGLE amphora rebuilt after a failover (or a host loss) brings the same VIP up behind
a new veth, so a new MAC address; the router and clients on the VIP network still hold
the old one in their neighbour tables and keep sending there until the entry goes stale
(tens of seconds on a real gateway). One broadcast ARP request whose sender and target
are both the address makes every neighbour holding an entry for it take the new MAC at
once (Linux updates an existing entry from any ARP it hears, past the entry's
``locktime``), which is what keepalived does for a VRRP takeover.

The frame goes out of an ``AF_PACKET`` socket bound to the link. The socket is made in a
short-lived thread that first enters the amphora's network namespace (a socket lives in
the namespace of the thread that created it, ``netns_thread``), so the agent itself never
leaves its own. Python has no ``arping``; this needs no Debian package. Root is needed,
as for everything in netns mode.

IPv6 has no ARP: the same is an unsolicited Neighbour Advertisement (RFC 4861 7.2.6) for
the address, with the Override flag and the link's MAC as target link-layer address, to
all nodes (``ff02::1``) with hop limit 255 (receivers drop any other). It goes out of an
ICMPv6 raw socket, whose checksum the kernel fills in; its source is the link's own
(link-local) address, which receivers accept.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
import time
from collections.abc import Callable

from lbaas.host.netns_thread import enter_network_namespace

ETH_P_ARP = 0x0806
#: Seconds after the first announcement at which it is sent again.
REPEAT_AFTER = (0.3, 1.2)
_ALL_NODES = "ff02::1"
_NEIGHBOUR_ADVERTISEMENT = 136
_OVERRIDE = 0x20000000
_TARGET_LINK_LAYER_ADDRESS = 2
_BROADCAST = b"\xff" * 6
_ARP_REQUEST = 1


def gratuitous_arp_frame(mac: bytes, address: str) -> bytes:
    """The Ethernet frame of a gratuitous ARP request announcing ``address`` at ``mac``."""
    if len(mac) != 6:
        raise ValueError(f"an Ethernet address has 6 bytes, not {len(mac)}")
    ip = ipaddress.IPv4Address(address).packed
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, _ARP_REQUEST, mac, ip, b"\x00" * 6, ip)
    return _BROADCAST + mac + struct.pack("!H", ETH_P_ARP) + arp


def send_gratuitous_arp(
    link: str, address: str, namespace: str | None = None, *, count: int = 2
) -> None:
    """Broadcast ``count`` gratuitous ARPs for IPv4 ``address`` out of ``link`` (and the
    same again later, ``REPEAT_AFTER``).

    ``namespace`` is where the link is (None: the caller's). Raises OSError when the
    namespace, the link or the raw socket cannot be had (not root, say).
    """

    def announce() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP)) as s:
            s.bind((link, ETH_P_ARP))
            mac = s.getsockname()[4]  # the link's own hardware address
            if len(mac) != 6:  # a link without an Ethernet address cannot announce it
                raise OSError(f"link {link} has no Ethernet address")
            frame = gratuitous_arp_frame(mac, address)
            for _ in range(count):
                s.send(frame)

    _announce_in(namespace, announce, "gratuitous-arp")


def _announce_in(namespace: str | None, announce: Callable[[], None], name: str) -> None:
    """Run ``announce`` in a thread inside ``namespace`` now and again at ``REPEAT_AFTER``.

    A link just made (a rebuilt amphora's leg) drops what is sent on it until the kernel
    has activated it (its queueing discipline is a no-op for up to a second), so the
    announcement is repeated; the caller waits for the first only, and gets its error.
    """
    first: list[OSError | None] = []
    done = threading.Event()

    def run() -> None:
        try:
            if namespace is not None:
                enter_network_namespace(namespace)
            announce()
            first.append(None)
        except OSError as exc:
            first.append(exc)
            return
        finally:
            done.set()
        waited = 0.0
        for at in REPEAT_AFTER:
            time.sleep(at - waited)
            waited = at
            try:
                announce()
            except OSError:  # the link went away meanwhile: nothing left to tell
                return

    # The thread ends after its last send, and with it its membership of the namespace.
    threading.Thread(target=run, name=name, daemon=True).start()
    done.wait(5.0)
    if first and first[0] is not None:
        raise first[0]


def neighbour_advertisement(mac: bytes, address: str) -> bytes:
    """The ICMPv6 message (checksum left 0) announcing IPv6 ``address`` at ``mac``."""
    if len(mac) != 6:
        raise ValueError(f"an Ethernet address has 6 bytes, not {len(mac)}")
    target = ipaddress.IPv6Address(address).packed
    option = struct.pack("!BB6s", _TARGET_LINK_LAYER_ADDRESS, 1, mac)
    return struct.pack("!BBHI16s", _NEIGHBOUR_ADVERTISEMENT, 0, 0, _OVERRIDE, target) + option


def send_unsolicited_na(
    link: str, address: str, namespace: str | None = None, *, count: int = 2
) -> None:
    """Send ``count`` unsolicited NAs for IPv6 ``address`` to all nodes on ``link`` (and
    again later). As ``send_gratuitous_arp``: ``namespace`` is where the link is."""

    def announce() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as packet:
            packet.bind((link, 0))
            mac = packet.getsockname()[4]
        index = socket.if_nametoindex(link)
        with socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6) as s:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
            message = neighbour_advertisement(mac, address)
            for _ in range(count):
                s.sendto(message, (_ALL_NODES, 0, 0, index))

    _announce_in(namespace, announce, "unsolicited-na")
