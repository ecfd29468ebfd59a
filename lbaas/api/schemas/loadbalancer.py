"""Request schemas of load balancers (the nested graph-create parts live with each child)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from lbaas.api.schemas.types import (
    AdminState,
    Description,
    IpAddress,
    Name,
    ProjectRef,
    Schema,
    Tags,
    Uuid,
)


class AdditionalVip(Schema):
    subnet_id: Uuid
    ip_address: IpAddress | None = None


class LoadBalancerCreate(Schema):
    name: Name | None = None
    description: Description | None = None
    admin_state_up: AdminState = True
    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None
    vip_subnet_id: Uuid | None = None
    vip_network_id: Uuid | None = None
    vip_port_id: Uuid | None = None
    vip_address: IpAddress | None = None
    vip_qos_policy_id: Uuid | None = None
    vip_sg_ids: list[Uuid] | None = None
    additional_vips: list[AdditionalVip] | None = None
    provider: str | None = Field(None, max_length=64)
    flavor_id: Uuid | None = None
    availability_zone: str | None = Field(None, max_length=255)
    # Graph create: validated by the listener and pool schemas (see graph_create).
    listeners: list[dict[str, Any]] | None = None
    pools: list[dict[str, Any]] | None = None
    tags: Tags | None = None


class LoadBalancerCreateBody(Schema):
    loadbalancer: LoadBalancerCreate


class LoadBalancerUpdate(Schema):
    name: Name | None = None
    description: Description | None = None
    admin_state_up: AdminState | None = None
    vip_qos_policy_id: Uuid | None = None
    vip_sg_ids: list[Uuid] | None = None
    tags: Tags | None = None


class LoadBalancerUpdateBody(Schema):
    loadbalancer: LoadBalancerUpdate
