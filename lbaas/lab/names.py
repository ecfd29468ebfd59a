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
MAX_CONTROL_HOSTS = 7  # control host k takes .1+k of the fabric (.2-.8), the database .9

FABRIC_BRIDGE = "br-fab"
VIP_BRIDGE = "br-vip"
FABRIC_IF = "fab0"
VIP_IF = "vip0"
OUTSIDE_IF = "out0"
CLIENT_IF = "eth0"
# The lab's agents run as root, and their HAProxy workers (no longer root) must reach the
# access-log sockets: not below the lab's private state directory, so below /run.
LOG_SOCKETS_ROOT = Path("/run/lbaas/lab-access-log")
# PostgreSQL of a lab with several control hosts runs as the postgres user, which cannot
# enter the lab's private state directory: its data directory lives here instead.
# (/run/lbaas is root's alone; this directory only lets postgres pass through to its own).
DATABASE_ROOT = Path("/run/lbaas-lab-db")
#: The tier's lease watcher's directory in ``<services_dir>/tier/``: the router host's own.
WATCHER_DIRECTORY = "watch"


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
        """The first control host's namespace (the only one unless ``up --control K``)."""
        return f"{self.lab}-ctl"

    def control_host(self, index: int) -> str:
        """Control host ``index``'s namespace: ``<lab>-ctl`` for the first, ``<lab>-ctl2``…"""
        return self.control if index == 1 else f"{self.lab}-{control_name(index)}"

    @property
    def database(self) -> str:
        """The database host of a lab with several control hosts (PostgreSQL)."""
        return f"{self.lab}-db"

    @property
    def database_dir(self) -> Path:
        """PostgreSQL's data directory for this lab, removed with it."""
        return DATABASE_ROOT / self.lab

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
        pattern = r"fab|rtr|cli|ctl[0-9]*|db|dsr[0-9]+|h[0-9]+(-[a-z0-9-]+)?"
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


def control_port(index: int = 1) -> str:
    """The bridge-side end of control host ``index``'s fabric link."""
    return "c-fab" if index == 1 else f"c{index}-fab"


def control_name(index: int) -> str:
    """Control host ``index``'s name in the lab's commands: ctl, ctl2, ctl3…"""
    return "ctl" if index == 1 else f"ctl{index}"


def control_index(name: str) -> int:
    """The index of control host ``name`` (ctl → 1, ctl3 → 3); 0 for another name."""
    if name == "ctl":
        return 1
    rest = name.removeprefix("ctl")
    return int(rest) if rest != name and rest.isdigit() and int(rest) >= 2 else 0


DATABASE_PORT = "d-fab"
