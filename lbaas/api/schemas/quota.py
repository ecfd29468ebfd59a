"""Request schema of ``PUT /v2/lbaas/quotas/{project_id}``.

Every limit is optional (only what is sent changes) and may be ``null`` to go back to the
deployment default. Two names from before Octavia's Rocky release are still accepted,
``load_balancer`` and ``health_monitor``, because openstacksdk sends only those;
``limits()`` folds them into the stored names so the rest of the code sees one spelling.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, WithJsonSchema

from lbaas.api.schemas.types import Schema

MIN_QUOTA = -1
MAX_QUOTA = 2_000_000_000

# A boolean is taken as 0 or 1, as Octavia's WSME types take it; the document says so, so
# that a client reading it (and schemathesis) knows ``false`` is a valid limit.
Limit = Annotated[
    int,
    Field(ge=MIN_QUOTA, le=MAX_QUOTA),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": MIN_QUOTA, "maximum": MAX_QUOTA},
                {"type": "boolean"},
            ]
        }
    ),
]

#: Deprecated request name → stored name.
ALIASES = {"load_balancer": "loadbalancer", "health_monitor": "healthmonitor"}


class QuotaUpdate(Schema):
    loadbalancer: Limit | None = None
    load_balancer: Limit | None = None
    listener: Limit | None = None
    pool: Limit | None = None
    member: Limit | None = None
    healthmonitor: Limit | None = None
    health_monitor: Limit | None = None
    l7policy: Limit | None = None
    l7rule: Limit | None = None

    def limits(self) -> dict[str, int | None]:
        """The limits that were sent, by stored name (``None`` = back to the default).

        When a limit is sent under both its name and its deprecated alias, the current
        name wins.
        """
        out: dict[str, int | None] = {}
        for name in self.model_fields_set:
            stored = ALIASES.get(name, name)
            if name in ALIASES and stored in self.model_fields_set:
                continue
            out[stored] = getattr(self, name)
        return out


class QuotaUpdateBody(Schema):
    quota: QuotaUpdate
