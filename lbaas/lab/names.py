"""Names of a lab's namespaces, interfaces and log-socket directories.

Only namespace names and the agents' access-log socket directories are global on the
machine, so only they carry the lab's name; every interface lives inside one of the lab's
namespaces, where a short fixed name cannot collide with another lab's (and Linux caps
interface names at 15 characters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lbaas.lab.base import LabError

# No hyphen in a lab name, so "<name>-" is a prefix no other lab's namespaces start with.
_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
MAX_HOSTS = 200  # host i takes .10+i in each /24
MAX_MEMBER_NETWORKS = 9

FABRIC_BRIDGE = "br-fab"
VIP_BRIDGE = "br-vip"
FABRIC_IF = "fab0"
VIP_IF = "vip0"
OUTSIDE_IF = "out0"
CLIENT_IF = "eth0"
# The lab's agents run as root, and their HAProxy workers (no longer root) must reach the
# access-log sockets: not below the lab's private state directory, so below /run.
LOG_SOCKETS_ROOT = Path("/run/lbaas/lab-access-log")


def member_bridge(index: int) -> str:
    return f"br-m{index}"


@dataclass(frozen=True)
class LabNames:
    lab: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.lab):
            raise LabError(
                f"lab name {self.lab!r} must be 1-12 lowercase letters or digits, "
                "starting with a letter"
            )

    @property
    def prefix(self) -> str:
        return f"{self.lab}-"

    @property
    def fabric(self) -> str:
        """The namespace holding the bridges: the fabric, the VIP and member networks."""
        return f"{self.lab}-fab"

    @property
    def router(self) -> str:
        return f"{self.lab}-rtr"

    @property
    def client(self) -> str:
        return f"{self.lab}-cli"

    @property
    def control(self) -> str:
        return f"{self.lab}-ctl"

    def host(self, index: int) -> str:
        return f"{self.lab}-h{index}"

    def host_prefix(self, index: int) -> str:
        """What the agent of host ``index`` starts its amphorae's namespace names with."""
        return f"{self.host(index)}-"

    @property
    def log_sockets(self) -> Path:
        """Where this lab's agents bind their amphorae's access-log sockets, one directory
        per host; removed with the lab (a killed agent leaves its sockets behind)."""
        return LOG_SOCKETS_ROOT / self.lab

    def is_ours(self, namespace: str) -> bool:
        """True for a namespace name this lab would make (used when its state file is lost),
        its hosts' amphorae (``<lab>-h2-amp-…``) included."""
        rest = namespace.removeprefix(self.prefix)
        pattern = r"fab|rtr|cli|ctl|dsr[0-9]+|h[0-9]+(-[a-z0-9-]+)?"
        return rest != namespace and re.fullmatch(pattern, rest) is not None

    def on_host(self, namespace: str, index: int) -> bool:
        """True for a namespace of host ``index``'s amphorae."""
        return namespace.startswith(self.host_prefix(index))


def bridge(network: str) -> str:
    """The bridge of a network in the fabric namespace (fab, vip, m0..m8)."""
    return {"fab": FABRIC_BRIDGE, "vip": VIP_BRIDGE}.get(network) or f"br-{network}"


def inner_interface(network: str) -> str:
    """A host's or the router's own interface on a network (fab0, vip0, mem0..)."""
    return {"fab": FABRIC_IF, "vip": VIP_IF}.get(network) or f"mem{network[1:]}"


def uplink_port(network: str) -> str:
    """On a host, the veth end that joins its uplink bridge (vip0, mem0..) to the network."""
    return f"{inner_interface(network)}p"


def host_port(host: int, network: str) -> str:
    """The bridge-side end of host ``host``'s link to ``network`` (fab, vip, m0..m8)."""
    return f"h{host}-{network}"


def router_port(network: str) -> str:
    return f"r-{network}"


def control_port() -> str:
    return "c-fab"
