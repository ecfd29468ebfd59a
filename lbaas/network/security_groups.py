"""Security groups and rules in lbaas's own tables: the embedded ``SecurityGroupRegistry``.

Neutron's rules for what a rule may say are kept (the same 400s and 409s): a port range
needs a protocol and, for protocols with ports, ``min <= max`` and no port 0; an ICMP
rule's "ports" are its type and code (0–255); a remote prefix must be of the rule's
ethertype; a prefix and a remote group exclude each other; the same rule twice is a 409.
A new group gets Neutron's two default egress rules (any IPv4, any IPv6). Projects get no
automatic ``default`` group (Neutron creates one on a project's first request): lbaas has
no ports to put in it, and a VIP uses only the groups its load balancer names.

A VIP enforces stateful groups only (the data planes keep connection state and admit a
flow's replies); a stateless group is refused in ``vip_sg_ids``, and a group in use
cannot be made stateless (409).
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lbaas.db.network import security_group_repo as repo
from lbaas.db.session import Session
from lbaas.db.tables import SecurityGroupRow, SecurityGroupRuleRow
from lbaas.errors import Conflict, InvalidInput, NotFound
from lbaas.model.security_rules import IPV4, PORTED, protocol_number

ICMP = frozenset({1, 58})


@dataclass(frozen=True)
class NewRule:
    security_group_id: str
    direction: str
    ethertype: str = IPV4
    protocol: str | None = None
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: str | None = None
    remote_group_id: str | None = None
    description: str = ""


def _new_id() -> str:
    return str(uuid.uuid4())


def create_group(
    session: Session, project_id: str, name: str, description: str, stateful: bool, now: datetime
) -> SecurityGroupRow:
    group = SecurityGroupRow(
        id=_new_id(),
        project_id=project_id,
        name=name,
        description=description,
        stateful=stateful,
        created_at=now,
    )
    session.add(group)
    for ethertype in ("IPv4", "IPv6"):
        session.add(
            SecurityGroupRuleRow(
                id=_new_id(),
                security_group_id=group.id,
                project_id=project_id,
                direction="egress",
                ethertype=ethertype,
                description="",
                created_at=now,
            )
        )
    session.flush()
    return group


def require_group(session: Session, group_id: str) -> SecurityGroupRow:
    group = repo.get_group(session, group_id)
    if group is None:
        raise NotFound(
            f"Security group {group_id} does not exist", neutron_type="SecurityGroupNotFound"
        )
    return group


def update_group(session: Session, group: SecurityGroupRow, changes: dict[str, object]) -> None:
    if changes.get("stateful") is False and repo.loadbalancers_using(
        session, group.project_id, group.id
    ):
        raise Conflict(
            f"Security Group {group.id} is used by a load balancer's VIP, which enforces "
            "stateful groups only.",
            neutron_type="SecurityGroupInUse",
        )
    for name, value in changes.items():
        setattr(group, name, value)


def delete_group(session: Session, group: SecurityGroupRow) -> None:
    if repo.loadbalancers_using(session, group.project_id, group.id):
        raise Conflict(f"Security Group {group.id} in use.", neutron_type="SecurityGroupInUse")
    repo.delete_group(session, group.id)


def _protocol(text: str | None) -> tuple[str | None, int | None]:
    """The protocol as stored (lower-case name or number, None for any) and its number."""
    if text is None or text.lower() in ("", "any", "0"):
        return None, None
    try:
        return text.lower(), protocol_number(text)
    except ValueError:
        raise InvalidInput(
            f"Security group rule protocol {text} not supported. Only protocol values "
            "[None, 'ah', 'dccp', 'egp', 'esp', 'gre', 'icmp', 'icmpv6', 'igmp', 'ipip', "
            "'ipv6-encap', 'ipv6-frag', 'ipv6-icmp', 'ipv6-nonxt', 'ipv6-opts', "
            "'ipv6-route', 'ospf', 'pgm', 'rsvp', 'sctp', 'tcp', 'udp', 'udplite', "
            "'vrrp'] and integer representations [0 to 255] are supported.",
            neutron_type="SecurityGroupRuleInvalidProtocol",
        ) from None


def _ports(number: int | None, low: int | None, high: int | None) -> tuple[int | None, int | None]:
    if low is None and high is None:
        return None, None
    if number is None:
        raise InvalidInput(
            "Must also specify protocol if port range is given.",
            neutron_type="SecurityGroupProtocolRequiredWithPorts",
        )
    if number in ICMP:
        for value in (low, high):
            if value is not None and value > 255:
                raise InvalidInput(
                    f"Invalid value for ICMP type or code {value}",
                    neutron_type="SecurityGroupInvalidIcmpValue",
                )
        return low, high
    if number not in PORTED:
        raise InvalidInput(f"Port range is not valid for protocol {number}.")
    if low is None:
        raise InvalidInput("port_range_min is required when port_range_max is given.")
    high = low if high is None else high
    for value in (low, high):
        if value == 0:
            raise InvalidInput(
                "Invalid value for port 0", neutron_type="SecurityGroupInvalidPortValue"
            )
    if low > high:
        raise InvalidInput(
            "For TCP/UDP protocols, port_range_min must be <= port_range_max",
            neutron_type="SecurityGroupInvalidPortRange",
        )
    return low, high


def _prefix(ethertype: str, prefix: str | None) -> str | None:
    if prefix is None:
        return None
    try:
        network = ipaddress.ip_network(prefix, strict=False)
    except ValueError:
        raise InvalidInput(f"'{prefix}' is not a valid IP prefix.") from None
    if (network.version == 4) != (ethertype == IPV4):
        raise InvalidInput(
            f"Conflicting value ethertype {ethertype} for CIDR {prefix}",
            neutron_type="SecurityGroupRuleParameterConflict",
        )
    return str(network)


def create_rule(
    session: Session, group: SecurityGroupRow, request: NewRule, now: datetime
) -> SecurityGroupRuleRow:
    """Check and record a rule of ``group`` (in the caller's transaction)."""
    if request.remote_ip_prefix is not None and request.remote_group_id is not None:
        raise InvalidInput(
            "Only remote_ip_prefix or remote_group_id may be provided.",
            neutron_type="SecurityGroupRemoteGroupAndRemoteIpPrefix",
        )
    if request.remote_group_id is not None:
        remote = repo.get_group(session, request.remote_group_id)
        if remote is None or remote.project_id != group.project_id:
            raise NotFound(
                f"Security group {request.remote_group_id} does not exist",
                neutron_type="SecurityGroupNotFound",
            )
    protocol, number = _protocol(request.protocol)
    low, high = _ports(number, request.port_range_min, request.port_range_max)
    rule = SecurityGroupRuleRow(
        id=_new_id(),
        security_group_id=group.id,
        project_id=group.project_id,
        direction=request.direction,
        ethertype=request.ethertype,
        protocol=protocol,
        port_range_min=low,
        port_range_max=high,
        remote_ip_prefix=_prefix(request.ethertype, request.remote_ip_prefix),
        remote_group_id=request.remote_group_id,
        description=request.description,
        created_at=now,
    )
    for other in repo.rules_of(session, [group.id]):
        if _same(other, rule):
            raise Conflict(
                f"Security group rule already exists. Rule id is {other.id}.",
                neutron_type="SecurityGroupRuleExists",
            )
    session.add(rule)
    session.flush()
    return rule


_COMPARED = (
    "direction",
    "ethertype",
    "port_range_min",
    "port_range_max",
    "remote_ip_prefix",
    "remote_group_id",
)


def _same(a: SecurityGroupRuleRow, b: SecurityGroupRuleRow) -> bool:
    if protocol_number(a.protocol) != protocol_number(b.protocol):
        return False
    return all(getattr(a, name) == getattr(b, name) for name in _COMPARED)


class EmbeddedSecurityGroups:
    """``SecurityGroupRegistry`` over lbaas's own tables."""

    def require_usable(self, session: Session, project_id: str, group_ids: Sequence[str]) -> None:
        for group_id in group_ids:
            group = repo.get_group(session, group_id)
            # Another project's group is "not found", as Octavia answers (its existence
            # is not the caller's business).
            if group is None or group.project_id != project_id:
                raise InvalidInput(f"Security Group {group_id} not found.")
            if not group.stateful:
                raise InvalidInput(
                    f"Security Group {group_id} is stateless; a VIP enforces stateful "
                    "security groups only."
                )

    def loadbalancers_using(self, session: Session, project_id: str, group_id: str) -> list[str]:
        return repo.loadbalancers_using(session, project_id, group_id)


EMBEDDED = EmbeddedSecurityGroups()
