"""Private subnets for tests that build networks, chosen so they shadow nothing on the host.

The same choice the multi-host lab makes for its own networks (``lbaas.lab.addresses``).
"""

from __future__ import annotations

import ipaddress
import random

from lbaas.host.commands import run_command
from lbaas.lab.addresses import networks_in_use, pick_networks


def pick_subnets(count: int) -> list[ipaddress.IPv4Network]:
    """``count`` random 10.x.y.0/24 networks that overlap nothing the host routes."""
    return pick_networks(count, networks_in_use(run_command), random.Random())
