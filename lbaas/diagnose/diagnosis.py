"""Running every hop for one load balancer and writing the verdicts for a terminal."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

from lbaas.db.engine import Database
from lbaas.db.loadbalancers.facts import load_balancer_facts, load_balancer_ids
from lbaas.diagnose.agent_hops import AgentLooks, amphora_hops
from lbaas.diagnose.base import AgentView, VipProbe
from lbaas.diagnose.certificates import certificate_hop
from lbaas.diagnose.hops import converge_hop, database_hop, member_hops, vip_hops
from lbaas.diagnose.verdict import Level, Verdict
from lbaas.keyrefs.base import KeyMaterial
from lbaas.model.enums import ProvisioningStatus


class Diagnosis:
    def __init__(
        self,
        database: Database,
        agent: AgentView,
        probe: VipProbe,
        material: KeyMaterial,
        *,
        stale_after: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._database = database
        self._agent = agent
        self._probe = probe
        self._material = material
        self._stale_after = stale_after
        self._clock = clock

    def run(self, loadbalancer_id: str) -> list[Verdict] | None:
        """The verdict of every hop, in order; None if there is no such load balancer."""
        with self._database.read_connection() as conn:
            facts = load_balancer_facts(conn, loadbalancer_id)
        if facts is None or facts.tree.provisioning_status == ProvisioningStatus.DELETED:
            return None
        now = self._clock()
        in_error = facts.tree.provisioning_status == ProvisioningStatus.ERROR
        looks = AgentLooks()
        verdicts = [
            database_hop(facts),
            converge_hop(facts.job, in_error, now),
            certificate_hop(facts.graph, self._material, dt.datetime.fromtimestamp(now, dt.UTC)),
            *amphora_hops(facts, self._agent, self._stale_after, now, looks),
        ]
        # The agents' looks, gathered above, are what the vip and members hops read.
        verdicts += vip_hops(facts, self._probe, self._stale_after, now, looks)
        verdicts += member_hops(facts, looks)
        return verdicts

    def resolve(self, word: str) -> list[str]:
        """The ids of the load balancers ``word`` names (an id first, else a name)."""
        with self._database.read_connection() as conn:
            return load_balancer_ids(conn, word)


def first_failure(verdicts: list[Verdict]) -> Verdict | None:
    return next((v for v in verdicts if v.level is Level.FAIL), None)


def render(loadbalancer_id: str, verdicts: list[Verdict]) -> str:
    width = max(len(v.hop) for v in verdicts)
    lines = [f"load balancer {loadbalancer_id}"]
    lines += [f"  [{v.level.value:>4}] {v.hop:<{width}}  {v.detail}" for v in verdicts]
    failed = first_failure(verdicts)
    if failed is None:
        lines.append("verdict: every hop is well")
    else:
        lines.append(f"verdict: broken at the {failed.hop} hop: {failed.detail}")
    return "\n".join(lines)
