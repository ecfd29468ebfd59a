"""Placement: which live host of a zone takes a new amphora, and where a pair goes.

Pure functions over ``HostLoad`` snapshots (the store takes the snapshot inside the
transaction that creates the amphora, so concurrent placements see each other):

* ``place_one``: the least-loaded host with room — fewest live amphorae, then most free
  capacity, then host id, so equal hosts fill evenly (within one of each other) and the
  choice is repeatable. ``avoid`` names hosts to stay off if any other host can take it
  (the host of the amphora a failover replaces: it is probably the one that failed).
* ``place_pair``: two distinct hosts for the two amphorae of an ACTIVE_STANDBY load
  balancer (anti-affinity), or ``PairPlacementImpossible`` naming what is missing.
* ``place_pair_member``: the host of one amphora joining a pair (a new pair's first, or
  the replacement of a failed one): never a host the rest of the pair is on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lbaas.errors import PermanentError, TemporaryError
from lbaas.model.fleet import HostLoad


class NoHostAvailable(TemporaryError):
    """No live host of the zone has room; hosts may come back, so the converge retries."""

    def __init__(self, zone: str | None, hosts: int) -> None:
        where = "any zone" if zone is None else f"zone {zone!r}"
        super().__init__(
            "No amphora host is available for this load balancer.",
            delay=2.0,
            operator_message=f"no live host with free capacity in {where} ({hosts} live)",
        )


class PairPlacementImpossible(PermanentError):
    """Fewer than two live hosts of the zone can take an amphora: a pair cannot be split."""

    def __init__(self, zone: str | None, hosts: Sequence[HostLoad]) -> None:
        where = "any zone" if zone is None else f"zone {zone!r}"
        names = ", ".join(h.host_id for h in hosts) or "none"
        super().__init__(
            "An ACTIVE_STANDBY load balancer needs two amphora hosts; "
            f"only {len(hosts)} can take one in {where}.",
            operator_message=f"hosts with room in {where}: {names}",
        )


def _with_room(hosts: Iterable[HostLoad]) -> list[HostLoad]:
    return sorted((h for h in hosts if h.free > 0), key=lambda h: (h.amphorae, -h.free, h.host_id))


def place_one(
    hosts: Sequence[HostLoad], *, zone: str | None, avoid: frozenset[str] = frozenset()
) -> HostLoad:
    """The host for one new amphora; raises ``NoHostAvailable``."""
    ranked = _with_room(hosts)
    preferred = [h for h in ranked if h.host_id not in avoid]
    if preferred:
        return preferred[0]
    if ranked:
        return ranked[0]
    raise NoHostAvailable(zone, len(hosts))


def place_pair(
    hosts: Sequence[HostLoad], *, zone: str | None, avoid: frozenset[str] = frozenset()
) -> tuple[HostLoad, HostLoad]:
    """Two distinct hosts for a pair; raises ``PairPlacementImpossible``."""
    ranked = _with_room(hosts)
    if len(ranked) < 2:
        raise PairPlacementImpossible(zone, ranked)
    first = place_one(ranked, zone=zone, avoid=avoid)
    rest = [h for h in ranked if h.host_id != first.host_id]
    return first, place_one(rest, zone=zone, avoid=avoid)


def place_pair_member(
    hosts: Sequence[HostLoad],
    *,
    zone: str | None,
    pair_hosts: frozenset[str],
    avoid: frozenset[str] = frozenset(),
) -> HostLoad:
    """The host for one amphora joining a pair whose other members are on ``pair_hosts``.

    Never one of ``pair_hosts`` (the pair must survive one host's loss); off ``avoid``
    when another host can take it (a failed amphora's host). With no other member yet
    there must be two hosts with room, or the second member could not be placed: the
    first is refused rather than a half pair built. Raises ``PairPlacementImpossible``.
    """
    if not pair_hosts:
        return place_pair(hosts, zone=zone, avoid=avoid)[0]
    others = _with_room(h for h in hosts if h.host_id not in pair_hosts)
    if not others:
        raise PairPlacementImpossible(zone, _with_room(hosts))
    return place_one(others, zone=zone, avoid=avoid)
