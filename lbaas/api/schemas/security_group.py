"""Request schemas of the Networking API's security groups and rules
(``/v2.0/security-groups``, ``/v2.0/security-group-rules``), as Neutron shapes them.

Only the shape is checked here; what depends on other values (a port range for the
protocol, a prefix of the rule's ethertype) is checked in ``lbaas.network.security_groups``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from lbaas.api.schemas.types import Description, Name, ProjectRef, Schema, Uuid

RulePort = Annotated[int, Field(ge=0, le=65535)]
Prefix = Annotated[str, Field(max_length=64)]


class GroupChanges(Schema):
    name: Name = ""
    description: Description = ""
    stateful: bool = True


class GroupCreate(GroupChanges):
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None


class GroupCreateBody(Schema):
    security_group: GroupCreate


class GroupUpdateBody(Schema):
    security_group: GroupChanges


class RuleCreate(Schema):
    security_group_id: Uuid
    direction: Literal["ingress", "egress"]
    ethertype: Literal["IPv4", "IPv6"] = "IPv4"
    # A name ("tcp"), a number 0–255 (as text or an integer), "any", or null for any.
    protocol: Annotated[str, Field(max_length=40)] | int | None = None
    port_range_min: RulePort | None = None
    port_range_max: RulePort | None = None
    remote_ip_prefix: Prefix | None = None
    remote_group_id: Uuid | None = None
    # Address groups are a Neutron extension lbaas does not have; only null is accepted.
    remote_address_group_id: None = None
    description: Description = ""
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None


class RuleCreateBody(Schema):
    security_group_rule: RuleCreate
