"""Request schemas of load balancers (the nested graph-create parts live with each child).

A new optional load balancer field goes into ``LoadBalancerOptions`` if a PUT may change
it, else into ``LoadBalancerCreate``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, WithJsonSchema

from lbaas.api.schemas.groups import Described, EnabledChange, EnabledOnCreate, ProjectOnCreate
from lbaas.api.schemas.types import (
    EMPTY_IS_DEFAULT,
    PROVIDER_MARK,
    IpAddress,
    Schema,
    Uuid,
    given_one_of,
)


class AdditionalVip(Schema):
    subnet_id: Uuid
    ip_address: IpAddress | None = None


class LoadBalancerOptions(Described):
    """Fields both create and update accept (all optional)."""

    # Accepted only empty: lbaas applies no QoS policy and knows no security group, and
    # answers 400 for any (``builders.loadbalancer.reject_unsupported_vip_options``).
    vip_qos_policy_id: Annotated[Uuid | None, WithJsonSchema({"type": "null"})] = None
    vip_sg_ids: Annotated[list[Uuid] | None, Field(json_schema_extra={"maxItems": 0})] = None


class LoadBalancerCreate(LoadBalancerOptions, EnabledOnCreate, ProjectOnCreate):
    model_config = ConfigDict(
        json_schema_extra=given_one_of("vip_port_id", "vip_network_id", "vip_subnet_id")
    )

    vip_subnet_id: Uuid | None = None
    vip_network_id: Uuid | None = None
    vip_port_id: Uuid | None = None
    vip_address: IpAddress | None = None
    additional_vips: list[AdditionalVip] | None = None
    provider: (
        Annotated[str, Field(max_length=64, json_schema_extra={PROVIDER_MARK: EMPTY_IS_DEFAULT})]
        | None
    ) = None
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
