"""Request schemas of load balancers (the nested graph-create parts live with each child).

A new optional load balancer field goes into ``LoadBalancerOptions`` if a PUT may change
it, else into ``LoadBalancerCreate``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from lbaas.api.schemas.groups import Described, EnabledChange, EnabledOnCreate, ProjectOnCreate
from lbaas.api.schemas.types import IpAddress, Schema, Uuid


class AdditionalVip(Schema):
    subnet_id: Uuid
    ip_address: IpAddress | None = None


class LoadBalancerOptions(Described):
    """Fields both create and update accept (all optional)."""

    vip_qos_policy_id: Uuid | None = None
    vip_sg_ids: list[Uuid] | None = None


class LoadBalancerCreate(LoadBalancerOptions, EnabledOnCreate, ProjectOnCreate):
    vip_subnet_id: Uuid | None = None
    vip_network_id: Uuid | None = None
    vip_port_id: Uuid | None = None
    vip_address: IpAddress | None = None
    additional_vips: list[AdditionalVip] | None = None
    provider: str | None = Field(None, max_length=64)
    flavor_id: Uuid | None = None
    availability_zone: str | None = Field(None, max_length=255)
    # Graph create: validated by the listener and pool schemas (see graph_create).
    listeners: list[dict[str, Any]] | None = None
    pools: list[dict[str, Any]] | None = None


class LoadBalancerCreateBody(Schema):
    loadbalancer: LoadBalancerCreate


class LoadBalancerUpdate(LoadBalancerOptions, EnabledChange):
    pass


class LoadBalancerUpdateBody(Schema):
    loadbalancer: LoadBalancerUpdate
