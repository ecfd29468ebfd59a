"""The single-call ("fully populated") load balancer create, and VIP extras.

Nested listeners and pools are validated by the same builders the standalone POSTs use, so
every rule of §5.2–5.7 applies; this module only resolves pool definitions and references
by name (definitions first, then the objects that refer to them).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from lbaas.api.context import RequestContext
from lbaas.api.schemas.loadbalancer import AdditionalVip
from lbaas.api.services import ApiServices
from lbaas.db.session import Session
from lbaas.db.tables import LoadBalancerRow
from lbaas.errors import InvalidInput
from lbaas.network.allocation import AllocatedVip, VipRequest, allocate_vip


def new_id() -> str:
    return str(uuid.uuid4())


def allocate_additional_vips(
    session: Session, extras: list[AdditionalVip], primary: AllocatedVip, owner: str, now: datetime
) -> list[dict[str, str]]:
    seen = {primary.subnet_id}
    out: list[dict[str, str]] = []
    for extra in extras:
        if extra.subnet_id in seen:
            raise InvalidInput(
                "Validation failure: Duplicate VIP subnet(s) specified. Only one IP can be "
                "bound per subnet."
            )
        seen.add(extra.subnet_id)
        vip = allocate_vip(
            session, VipRequest(subnet_id=extra.subnet_id, address=extra.ip_address), owner, now
        )
        if vip.network_id != primary.network_id:
            raise InvalidInput(
                "Validation failure: All VIP subnets must belong to the same network."
            )
        out.append({"subnet_id": vip.subnet_id, "ip_address": vip.address, "port_id": vip.port_id})
    return out


def create_children(
    session: Session,
    services: ApiServices,
    ctx: RequestContext,
    lb: LoadBalancerRow,
    listeners: list[dict[str, Any]],
    pools: list[dict[str, Any]],
    now: datetime,
) -> dict[str, Any]:
    raise InvalidInput("Fully populated load balancer create is not supported yet.")
