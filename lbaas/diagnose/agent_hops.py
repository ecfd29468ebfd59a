"""The hops only an amphora's agent can answer: is the amphora heard from, does its agent
answer and know it, is its HAProxy running; and the agent's look at it now
(``lbaas.wire.amphora_diagnosis``), which the vip and members hops read.

An agent that cannot be asked is named with where it was asked: the host id and the URL,
so an operator sees at once a wrong address or port (a host enrolled with an old one, the
configured ``agent.port`` differing from the agent's)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from lbaas.db.amphorae.amphora_repo import AmphoraFacts
from lbaas.db.loadbalancers.facts import LoadBalancerFacts
from lbaas.diagnose.base import AgentView
from lbaas.diagnose.verdict import Level, Verdict
from lbaas.errors import AgentUnreachable
from lbaas.wire.amphora import AmphoraStatus as AgentAmphora
from lbaas.wire.amphora_diagnosis import AmphoraDiagnosis


@dataclass
class AgentLooks:
    """What each reachable agent saw of its amphora now, by amphora id."""

    seen: dict[str, AmphoraDiagnosis] = field(default_factory=dict)


def amphora_hops(
    facts: LoadBalancerFacts, agent: AgentView, stale_after: float, now: float, looks: AgentLooks
) -> Iterator[Verdict]:
    """Per amphora: heard from, its agent, its HAProxy; fills ``looks``."""
    if not facts.amphorae:
        yield Verdict("amphora", Level.SKIP, f"no amphora (provider {facts.tree.provider})")
        return
    for amp in facts.amphorae:
        yield _heard(amp, stale_after, now)
        where = agent.where(amp)
        agent_at = f"agent of amphora {amp.id} (host {where.host_id} at {where.base_url})"
        try:
            status = agent.amphora(where, amp.id)
            look = None if status is None else agent.diagnosis(where, amp.id)
        except AgentUnreachable as exc:
            detail = f"{agent_at} unreachable: {exc.operator_message}"
            yield Verdict("agent", Level.FAIL, detail)
            yield Verdict("haproxy", Level.SKIP, "unknown: the agent cannot be asked")
            continue
        if status is None:
            yield Verdict("agent", Level.FAIL, f"the {agent_at} does not know the amphora")
            continue
        older = "" if look is not None else "; it does not look at the amphora (an older agent)"
        yield Verdict("agent", Level.OK, f"{agent_at}: knows the amphora{older}")
        if look is not None:
            looks.seen[amp.id] = look
        yield haproxy_hop(status)


def _heard(amp: AmphoraFacts, stale_after: float, now: float) -> Verdict:
    where = f"amphora {amp.id} on {amp.host or '?'}"
    if amp.failover_pending:
        return Verdict("amphora", Level.FAIL, f"{where}: failover requested, not yet done")
    if amp.last_heartbeat_at is None:
        return Verdict("amphora", Level.FAIL, f"{where}: never heard from")
    age = now - amp.last_heartbeat_at
    if age > stale_after:
        detail = f"{where}: silent for {age:.1f}s (stale after {stale_after:g}s)"
        return Verdict("amphora", Level.FAIL, detail)
    return Verdict("amphora", Level.OK, f"{where}: heartbeat {age:.1f}s ago")


def haproxy_hop(status: AgentAmphora) -> Verdict:
    version = (
        f"applied version {status.applied_version}"
        if status.applied_version
        else "no version applied"
    )
    facts = f"{version}, last outcome {status.last_outcome or 'none'}, {status.restarts} restart(s)"
    if status.last_error:
        facts += f"; last error: {status.last_error}"
    if not status.running:
        return Verdict("haproxy", Level.FAIL, f"not running ({facts})")
    return Verdict("haproxy", Level.OK, f"running, pid {status.master_pid} ({facts})")


__all__ = ["AgentLooks", "amphora_hops", "haproxy_hop"]
