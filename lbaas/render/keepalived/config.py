"""``render_keepalived_config``: the keepalived configuration of one amphora of a pair.

Each amphora of an ACTIVE_STANDBY load balancer runs its own keepalived with one VRRP
instance, talking VRRPv3 over unicast to the other amphora only (``unicast_src_ip`` and
``unicast_peer``): no multicast group is shared between load balancers on the same
network, and a stranger's advertisements are not even looked at. Both amphorae start as
BACKUP with different priorities and ``nopreempt``: the higher one wins the first
election, and an amphora that comes back (a rebuilt one, a restarted keepalived) never
takes the VIP away from a healthy MASTER, which would cost a second takeover for nothing.

A track script asks the local HAProxy for ``show info`` on its runtime socket; a dead
HAProxy refuses the connection and a hung (stopped) one does not answer within the
script's timeout, and after ``fall`` failures the instance goes to FAULT, which sends a
priority-0 advertisement so the peer takes over at once instead of waiting for the
advertisement timeout. On becoming MASTER keepalived sends gratuitous ARP (unsolicited
NA for IPv6) for the VIP, repeated once more ``garp_master_delay`` later, so neighbours
that missed the first burst still move.

The function is pure and everything in the input is checked here: the strings it writes
come from the agent (paths, interface names) and the controller (addresses), never from
tenants, but a quote or a newline in one would still end a keepalived word, so they are
refused rather than written.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from lbaas.errors import PermanentError

INDENT = "    "
_WORD = re.compile(r"^[A-Za-z0-9_.:/@+=-]{1,255}$")
_PATH = re.compile(r"^/[A-Za-z0-9_./@+=-]{1,1000}$")


@dataclass(frozen=True)
class VrrpConfig:
    """Everything the keepalived configuration of one amphora says."""

    instance_name: str
    """Name of the VRRP instance and of keepalived's ``router_id`` (one word)."""

    virtual_router_id: int
    """VRID, 1..255: the same on both amphorae of the pair."""

    priority: int
    """1..254; the two amphorae of a pair have different priorities."""

    interface: str
    """The amphora's link on the VIP network, inside its namespace."""

    own_address: str
    """The amphora's own (VRRP) address on the VIP network: advertisements come from it."""

    peer_address: str
    """The other amphora's VRRP address: advertisements go to it."""

    vip: str
    """The VIP in CIDR form (``10.0.0.5/24``): keepalived adds it on MASTER only."""

    check_command: tuple[str, ...]
    """The HAProxy check: an absolute executable path and its arguments."""

    advert_interval_ms: int = 100
    """Advertisement interval in milliseconds (VRRPv3 counts centiseconds)."""

    check_interval_s: int = 1
    check_timeout_s: int = 1
    check_fall: int = 2
    check_rise: int = 2

    garp_master_delay_s: int = 1
    """Seconds after becoming MASTER before the second burst of gratuitous ARPs."""

    garp_master_repeat: int = 3
    """Gratuitous ARPs (or NAs) per burst."""

    notify_command: tuple[str, ...] | None = None
    """Run on every state change with keepalived's own arguments appended (``INSTANCE``,
    the instance name, the new state, the priority): the agent's record of whether this
    amphora holds the VIP, which it announces so the API shows the real MASTER."""

    realtime_priority: int | None = None
    """SCHED_RR priority of keepalived's VRRP process (``vrrp_rt_priority``), or None."""

    realtime_cpu_limit_us: int = 500_000
    """With a realtime priority: CPU time the VRRP process may use without blocking before
    the kernel kills it (``vrrp_rlimit_rttime``). keepalived's default, 10 ms, is less than
    becoming MASTER (adding the VIP, a burst of gratuitous ARPs) takes on a loaded host:
    the VRRP child was killed at the moment of takeover and came back a second later as
    BACKUP, having removed the VIP it had just added (measured, see docs/architecture.md)."""


def render_keepalived_config(config: VrrpConfig) -> str:
    """The whole keepalived configuration file for ``config``, ending with a newline."""
    _check(config)
    sections = [
        _header(config.instance_name),
        _block("global_defs", _global_lines(config)),
        _block("vrrp_script check_haproxy", _script_lines(config)),
        _block(f"vrrp_instance {config.instance_name}", _instance_lines(config)),
    ]
    return "\n".join(sections)


def advert_interval_word(milliseconds: int) -> str:
    """``advert_int`` in seconds with at most two decimals (VRRPv3's centiseconds)."""
    return f"{milliseconds // 1000}.{(milliseconds % 1000) // 10:02d}"


def _check(config: VrrpConfig) -> None:
    for what, word in (("instance name", config.instance_name), ("interface", config.interface)):
        if _WORD.fullmatch(word) is None:
            raise PermanentError(f"keepalived {what} {word!r} is not one plain word")
    _check_command("HAProxy check", config.check_command)
    if config.notify_command is not None:
        _check_command("state notification", config.notify_command)
    if not 1 <= config.virtual_router_id <= 255:
        raise PermanentError(f"virtual router id {config.virtual_router_id} is not in 1..255")
    if not 1 <= config.priority <= 254:
        raise PermanentError(f"VRRP priority {config.priority} is not in 1..254")
    if not 10 <= config.advert_interval_ms <= 40950 or config.advert_interval_ms % 10:
        raise PermanentError("the advertisement interval must be whole centiseconds, 10..40950")
    own = ipaddress.ip_address(config.own_address)
    peer = ipaddress.ip_address(config.peer_address)
    vip = ipaddress.ip_interface(config.vip)
    if not own.version == peer.version == vip.version:
        raise PermanentError("the VIP and both VRRP addresses must be of one IP version")
    if len({own, peer, vip.ip}) != 3:
        raise PermanentError("the VIP and both VRRP addresses must differ")


def _check_command(what: str, command: tuple[str, ...]) -> None:
    if not command or _PATH.fullmatch(command[0]) is None:
        raise PermanentError(f"the {what} must start with an absolute path")
    for argument in command[1:]:
        if _PATH.fullmatch(argument) is None and _WORD.fullmatch(argument) is None:
            raise PermanentError(f"{what} argument {argument!r} is not one plain word")


def _header(name: str) -> str:
    return (
        f"# keepalived configuration of {name}, rendered by lbaas.\n"
        "# Do not edit: the agent replaces this file with every change.\n"
    )


def _block(title: str, lines: list[str]) -> str:
    return title + " {\n" + "".join(f"{INDENT}{line}\n" for line in lines) + "}\n"


def _global_lines(config: VrrpConfig) -> list[str]:
    lines = [
        f"router_id {config.instance_name}",
        "vrrp_version 3",
        # Scripts run as root (they read HAProxy's root-only socket), and keepalived then
        # insists that nobody else can write them: refused otherwise, never run.
        "script_user root",
        "enable_script_security",
    ]
    if config.realtime_priority is not None:
        lines.append(f"vrrp_rt_priority {config.realtime_priority}")
        lines.append(f"vrrp_rlimit_rttime {config.realtime_cpu_limit_us}")
    return lines


def _script_lines(config: VrrpConfig) -> list[str]:
    return [
        f'script "{" ".join(config.check_command)}"',
        f"interval {config.check_interval_s}",
        f"timeout {config.check_timeout_s}",
        f"fall {config.check_fall}",
        f"rise {config.check_rise}",
    ]


def _instance_lines(config: VrrpConfig) -> list[str]:
    vip = ipaddress.ip_interface(config.vip)
    return [
        # Both start BACKUP: the election picks the higher priority, and nopreempt keeps
        # a returning amphora from taking the VIP back from a healthy MASTER.
        "state BACKUP",
        "nopreempt",
        f"interface {config.interface}",
        f"virtual_router_id {config.virtual_router_id}",
        f"priority {config.priority}",
        f"advert_int {advert_interval_word(config.advert_interval_ms)}",
        f"unicast_src_ip {ipaddress.ip_address(config.own_address)}",
        "unicast_peer {",
        f"{INDENT}{ipaddress.ip_address(config.peer_address)}",
        "}",
        "virtual_ipaddress {",
        f"{INDENT}{vip.ip}/{vip.network.prefixlen} dev {config.interface}",
        "}",
        "track_script {",
        f"{INDENT}check_haproxy",
        "}",
        f"garp_master_delay {config.garp_master_delay_s}",
        f"garp_master_repeat {config.garp_master_repeat}",
        *([] if config.notify_command is None else [f'notify "{" ".join(config.notify_command)}"']),
    ]
