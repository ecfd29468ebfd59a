"""The failover-storm judgement: is this much silence our fault or the data plane's?

Octavia's guard compares the stale amphorae with all of them: above ``failover_threshold``
automatic failover stops. On a fleet of two or three hosts that is wrong whenever one
host runs more than half the amphorae: losing that host (a real loss, whose amphorae
must be rebuilt elsewhere) looks like a storm and nothing is rebuilt. So silence is
judged per host first. A host all of whose amphorae are silent is a lost host; losing
more than the threshold's share of the hosts at once (at least two) is a storm, since
hosts rarely die together while our own network, key or database fails them all. The
amphorae of the other hosts are then judged as before, against each other: a scattering
of silent amphorae across live hosts above the threshold is a storm too.

Amphorae without a recorded host (no fleet) are judged together as one group, as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

from lbaas.health.store import AmphoraHeartbeat
from lbaas.model.graph import AmphoraId


def storm_reason(
    heard: Sequence[AmphoraHeartbeat],
    stale: Collection[AmphoraId],
    *,
    threshold: float,
    min_storm_size: int,
) -> str | None:
    """Why the silence in ``stale`` (out of ``heard``) is a storm, or None if it is not."""
    by_host: dict[str, list[AmphoraId]] = defaultdict(list)
    for hb in heard:
        if hb.host is not None:
            by_host[hb.host].append(hb.amphora_id)
    lost: set[str] = set()
    if len(by_host) >= 2:
        lost = {h for h, amphorae in by_host.items() if all(a in stale for a in amphorae)}
        if len(lost) >= 2 and len(lost) > threshold * len(by_host):
            return (
                f"failover storm: {len(lost)} of {len(by_host)} hosts silent at once; "
                "automatic failover stopped"
            )
    rest = [hb.amphora_id for hb in heard if hb.host is None or hb.host not in lost]
    scattered = sum(1 for a in rest if a in stale)
    if scattered >= min_storm_size and scattered > threshold * len(rest):
        where = f" outside {len(lost)} lost host(s)" if lost else ""
        return (
            f"failover storm: {scattered} of {len(rest)} amphorae{where} stale; "
            "automatic failover stopped"
        )
    return None
