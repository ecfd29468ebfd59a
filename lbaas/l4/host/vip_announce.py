"""The distributed entry node's VIP, announced: gratuitous ARP when a node starts holding it.

``RealVipHolder`` puts the VIP on ``lo``, and Linux then answers ARP for it. But a client
or router outside that asked before still holds the previous entry node's MAC, and keeps
sending there until its neighbour entry goes stale (some 30 s on Linux) — to a node that
no longer holds the VIP. So a node that starts holding the VIP (it became the entry, the
VIP changed, or its agent restarted) broadcasts gratuitous ARPs for it (``garp``, the
same frames an amphora sends after a failover) out of each link a neighbour can reach it
on: the up, ARP-capable links with an IPv4 network that contains the VIP, or, if none
does, every such link with an IPv4 address. A failed announcement is logged, never fatal:
the VIP is held and answers ARP either way.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import subprocess
from collections.abc import Callable, Sequence

from lbaas.host.garp import send_gratuitous_arp
from lbaas.l4.host.base import VipHolder

log = logging.getLogger(__name__)

#: Announces the VIPs given (several at once: an agent restoring thousands of them).
Announce = Callable[[Sequence[str]], None]


class AnnouncingVipHolder(VipHolder):
    """``inner``'s VIP, plus ``announce(vip)`` each time this process starts holding it."""

    def __init__(self, inner: VipHolder, announce: Announce) -> None:
        self._inner = inner
        self._announce = announce
        self._held: set[str] = set()

    def hold(self, vip: str) -> None:
        self._inner.hold(vip)
        self._announce_new([vip])

    def hold_many(self, vips: Sequence[str]) -> None:
        self._inner.hold_many(vips)
        self._announce_new(vips)

    def _announce_new(self, vips: Sequence[str]) -> None:
        new = [vip for vip in dict.fromkeys(vips) if vip not in self._held]
        if not new:
            return
        self._held.update(new)
        try:
            self._announce(new)
        except OSError as exc:
            log.warning("gratuitous ARP for %s not sent: %s", ", ".join(new), exc)

    def release(self, vip: str) -> None:
        self._inner.release(vip)
        self._held.discard(vip)


def announce_links(addresses: list[dict[str, object]], vip: str) -> list[str]:
    """The links to announce ``vip`` on, from ``ip -j -4 addr show`` output."""
    target = ipaddress.IPv4Address(vip)
    candidates: list[tuple[str, bool]] = []
    for link in addresses:
        flags = link.get("flags") or []
        name = str(link.get("ifname", ""))
        if not isinstance(flags, list) or "UP" not in flags:
            continue
        if "LOOPBACK" in flags or "NOARP" in flags or not name:
            continue
        if link.get("link_type", "ether") != "ether":  # no Ethernet address to announce at
            continue
        infos = link.get("addr_info") or []
        networks = [
            ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False)
            for info in (infos if isinstance(infos, list) else [])
            if isinstance(info, dict) and info.get("family") == "inet"
        ]
        if networks:
            candidates.append((name, any(target in net for net in networks)))
    inside = [name for name, contains in candidates if contains]
    return inside or [name for name, _ in candidates]


class LinkAnnouncer:
    """Gratuitous ARP for a VIP on ``announce_links`` of ``namespace`` (None: this one)."""

    def __init__(self, namespace: str | None = None, *, ip_binary: str = "ip") -> None:
        self._namespace = namespace
        self._ip = [ip_binary] if namespace is None else [ip_binary, "-n", namespace]

    def __call__(self, vips: Sequence[str]) -> None:
        """One listing of the links for all of ``vips``."""
        try:
            done = subprocess.run(
                [*self._ip, "-j", "-4", "addr", "show"],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            raise OSError(f"listing links failed: {exc}") from exc
        addresses = json.loads(done.stdout or "[]")
        for vip in vips:
            for link in announce_links(addresses, vip):
                send_gratuitous_arp(link, vip, self._namespace)
