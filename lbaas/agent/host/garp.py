"""Gratuitous ARP: tell the neighbours of a link which MAC address an IPv4 address has now.

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
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading

from lbaas.agent.host.netns_thread import enter_network_namespace

ETH_P_ARP = 0x0806
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
    """Broadcast ``count`` gratuitous ARPs for IPv4 ``address`` out of ``link``.

    ``namespace`` is where the link is (None: the caller's). Raises OSError when the
    namespace, the link or the raw socket cannot be had (not root, say).
    """
    failure: list[OSError] = []

    def announce() -> None:
        try:
            if namespace is not None:
                enter_network_namespace(namespace)
            with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP)) as s:
                s.bind((link, ETH_P_ARP))
                mac = s.getsockname()[4]  # the link's own hardware address
                frame = gratuitous_arp_frame(mac, address)
                for _ in range(count):
                    s.send(frame)
        except OSError as exc:
            failure.append(exc)

    # The thread ends after sending, and with it its membership of the namespace.
    thread = threading.Thread(target=announce, name="gratuitous-arp", daemon=True)
    thread.start()
    thread.join(5.0)
    if failure:
        raise failure[0]
