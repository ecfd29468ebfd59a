"""What ``GET /v1/spares`` answers: this agent's spare amphora slots (``agent.spare_amphorae``).

Its own route rather than fields of ``AgentInfo``: the controller reads ``AgentInfo`` with
unknown fields refused, so a new field there would break a controller one release older.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SpareInfo(BaseModel):
    """One prepared slot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    namespace: str
    master_pid: int = Field(description="Its HAProxy master, running the placeholder.")


class SparesStatus(BaseModel):
    """The pool as the agent sees it now."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    configured: int = Field(description="agent.spare_amphorae: the slots kept ready.")
    ready: tuple[SpareInfo, ...] = ()
    taken: int = Field(0, description="Slots taken by new amphorae since the agent started.")
    last_error: str | None = Field(
        None, description="Why the last refill failed (retried); None once one succeeds."
    )
