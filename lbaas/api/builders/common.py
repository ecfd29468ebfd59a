"""What every builder does alike: the columns a new object starts with, adding it with its
tags, and laying the plain fields of a PUT over a row."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from lbaas.api.schemas.types import Schema
from lbaas.db.listing import add_tags
from lbaas.db.session import Session
from lbaas.db.tables import Base
from lbaas.model.enums import OperatingStatus, ProvisioningStatus

RowT = TypeVar("RowT", bound=Base)


def new_object_columns(
    project_id: str,
    now: datetime,
    operating: OperatingStatus = OperatingStatus.OFFLINE,
    data: Schema | None = None,
) -> dict[str, Any]:
    """The columns every new object of the tree starts with: the id ``data`` gives (an
    administrator's, see ``GivenId``) or a fresh one, the project of its load balancer,
    PENDING_CREATE, the operating status it starts in, created ``now``."""
    given = getattr(data, "id", None)
    return {
        "id": str(given) if given else str(uuid.uuid4()),
        "project_id": project_id,
        "provisioning_status": ProvisioningStatus.PENDING_CREATE.value,
        "operating_status": operating.value,
        "created_at": now,
    }


def add_new_row(
    session: Session, row: RowT, tags: Sequence[str] | None, *, flush: bool = True
) -> RowT:
    """Add a new row and its tags. ``flush=False`` where many are added in one go (a
    member batch) and nothing needs the row written before the commit."""
    session.add(row)
    if flush:
        session.flush()
    add_tags(session, getattr(row, "id"), tags or [])  # noqa: B009 - every tree row has one
    return row


def apply_sent(row: Any, data: Schema, names: Iterable[str]) -> None:
    """Copy the fields of ``names`` a PUT sent onto ``row``, and ``admin_state_up`` (a
    sent null is false) when sent."""
    for name in names:
        if data.given(name):
            setattr(row, name, getattr(data, name))
    if data.given("admin_state_up"):
        row.admin_state_up = bool(getattr(data, "admin_state_up"))  # noqa: B009
