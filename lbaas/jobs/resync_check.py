"""The resync checks before it converges (issue 34: a full resync of 10,000 in a minute).

The periodic resync used to converge every load balancer again once per
``worker.resync_interval``: the whole tree read, the data plane sent its spec again and
asked its status, the result settled — some 40 ms of control-plane CPU and 20 ms of a
node's for a load balancer where nothing differed, so 10,000 took minutes. Where the
provider can tell which version its data plane holds (the distributed provider: each
node lists every service it carries, with the version applied, in one call), a tick first
checks the load balancers that are due against the version their last converge sent
(``resync_versions``). Those every data plane holds at that version, without an error,
are marked checked and are not converged; the rest (a node that lost or never got a
spec, a different version, an error, a node that did not answer, a provider that cannot
tell) go to the converge share as before. What is compared is what each data plane's
agent says it holds; the agent keeps its kernel state to that itself (its supervisor and
its restore at start).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lbaas.db.engine import Database
from lbaas.db.jobs import resync_versions

LOG = logging.getLogger(__name__)

VersionCheck = Callable[[str, Mapping[str, int]], set[str] | None]
"""(provider name, {load balancer id: version wanted}) -> the ids held at that version;
None: the provider cannot tell now."""

#: Load balancers checked in one tick at most: one listing per node answers them all.
CHECK_BATCH = 20_000


@dataclass(frozen=True)
class CheckResult:
    held: int
    """Load balancers marked checked: not converged this round."""
    undecided: int
    """Load balancers whose provider could not tell now (see ``ResyncPacing``)."""


def check_due(
    db: Database, check: VersionCheck, now: float, interval: float, limit: int = CHECK_BATCH
) -> CheckResult:
    """Check the load balancers due for a resync that have a version; mark those held."""
    held: dict[str, int] = {}
    undecided = 0
    for provider, wanted in resync_versions.due_with_versions(db, now, interval, limit).items():
        try:
            found = check(provider, wanted)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the converges still run
            LOG.warning("resync: provider %s could not check versions: %s", provider, exc)
            found = None
        if found is None:
            undecided += len(wanted)
            continue
        held.update((lb_id, wanted[lb_id]) for lb_id in found if lb_id in wanted)
    resync_versions.mark_checked(db, held, now)
    return CheckResult(len(held), undecided)


class ResyncPacing:
    """Whether a tick may converge what is due, after its check.

    Right after a controller starts, a provider may not be able to tell yet (the hosts
    registry has not heard its nodes again): converging every load balancer it was asked
    about would be the old full resync for those (the likely reason 69 of 950 distributed
    load balancers were converged again at 1,000 before this). So while a check is
    undecided the converges wait, for one interval at most: a data plane that never
    answers is converged as it always was.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._undecided_since: float | None = None

    def may_converge(self, result: CheckResult, now: float) -> bool:
        if not result.undecided:
            self._undecided_since = None
            return True
        if self._undecided_since is None:
            self._undecided_since = now
        return now - self._undecided_since >= self._interval
