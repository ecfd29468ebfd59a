"""Whether a new configuration differs from the running one only in what runs without reload.

Decided from the ``HaproxyFacts`` the controller sends beside each text, never from the
text: the two must have the same ``fixed_digest`` (everything but server weights, admin
states and comments is equal) and name the same servers in the same order. Then the
difference is a list of ``ServerChange``, one per server whose weight or admin state
differs, which the runtime API applies; anything else is a reload. Facts of the running
configuration that are unknown (none were stored) mean a reload too.
"""

from __future__ import annotations

from dataclasses import dataclass

from lbaas.wire.amphora import HaproxyFacts


@dataclass(frozen=True)
class ServerChange:
    """One runtime API change: a new weight and/or admin state for one server."""

    backend: str
    server: str
    weight: int | None = None
    disabled: bool | None = None


def runtime_only_changes(old: HaproxyFacts | None, new: HaproxyFacts) -> list[ServerChange] | None:
    """The server changes that turn ``old`` into ``new``, or None if a reload is needed."""
    if old is None or old.fixed_digest != new.fixed_digest:
        return None
    if [(s.backend, s.server) for s in old.servers] != [(s.backend, s.server) for s in new.servers]:
        return None
    return [
        ServerChange(
            backend=after.backend,
            server=after.server,
            weight=after.weight if after.weight != before.weight else None,
            disabled=after.disabled if after.disabled != before.disabled else None,
        )
        for before, after in zip(old.servers, new.servers, strict=True)
        if before != after
    ]
