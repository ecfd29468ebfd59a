"""Reachability inside the lab's namespaces, without ping (not installed everywhere).

A TCP connection to a port nobody listens on is answered with a reset when the address is
reachable, and times out or meets "no route"/"host unreachable" when it is not. The probe
runs in the source namespace, so no packet touches the host's own networking.
"""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import socket, sys
s = socket.socket()
s.settimeout(float(sys.argv[2]))
try:
    s.connect((sys.argv[1], 9))
except ConnectionRefusedError:
    sys.exit(0)
except OSError:
    sys.exit(1)
sys.exit(0)
"""


def reachable(namespace: str, address: str, timeout: float = 2.0) -> bool:
    """True when ``address`` answers from inside ``namespace`` (a reset or an accept)."""
    argv = ["ip", "netns", "exec", namespace, sys.executable, "-c", _PROBE, address, str(timeout)]
    return subprocess.run(argv, capture_output=True, timeout=timeout + 30).returncode == 0


_OWN_ADDRESS = """
import sys
from lbaas.health.pair_probe import PeerPortProbe
sys.exit(0 if PeerPortProbe(timeout=float(sys.argv[2])).answers(sys.argv[1]) else 1)
"""


def own_address_answers(namespace: str, address: str, timeout: float = 1.0) -> bool:
    """The health manager's probe of a pair amphora (``lbaas.health.pair_probe``: its
    HAProxy's peers port on ``address``), run from inside ``namespace``."""
    argv = ["ip", "netns", "exec", namespace, sys.executable, "-c", _OWN_ADDRESS, address]
    done = subprocess.run([*argv, str(timeout)], capture_output=True, timeout=timeout + 30)
    return done.returncode == 0


def bare(address: str) -> str:
    return address.split("/", 1)[0]


def lab_links(prefix: str) -> list[str]:
    """Namespaces and root-namespace links whose name starts with ``prefix``."""
    namespaces = subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True, check=True
    ).stdout.split()
    links = subprocess.run(
        ["ip", "-o", "link"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    names = [line.split(":")[1].strip().split("@")[0] for line in links]
    return [name for name in [*namespaces, *names] if name.startswith(prefix)]


def eventually_reachable(namespace: str, address: str, attempts: int = 10) -> bool:
    """``reachable`` within a few tries: after a heal, a neighbour that gave up on the host
    (ARP entry INCOMPLETE or FAILED) asks again only on its next retransmission."""
    return any(reachable(namespace, address, timeout=1.0) for _ in range(attempts))
