"""A tier node's VIP announcements through its BIRD: a file of static routes, then reconfigure.

The node's BIRD configuration (the operator's, or ``lbaas.tier.bird.render_node`` with
``include``) includes this file inside its ``protocol static vips``; the agent owns only the
file, never the BGP session. The file is replaced atomically (``write_private`` writes a
temporary file and renames it), so BIRD never parses half of it, and ``birdc configure``
makes BIRD announce what is added and withdraw what is gone.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from lbaas.l4.host.base import VipAnnouncer
from lbaas.private_files import write_private
from lbaas.tier.host.bird import BirdControl


def render_routes(vips: frozenset[str]) -> str:
    lines = [
        "# VIPs announced by this tier node's lbaas agent (lbaas/tier/host/bird_announcer.py)."
    ]
    lines += [f"route {ipaddress.IPv4Address(vip)}/32 blackhole;" for vip in sorted(vips)]
    return "\n".join(lines) + "\n"


class BirdVipAnnouncer(VipAnnouncer):
    def __init__(self, routes_file: Path, control: BirdControl) -> None:
        self._file = routes_file
        self._control = control

    def announce(self, vips: frozenset[str]) -> None:
        write_private(self._file, render_routes(vips))
        self._control.configure()
