"""One verdict per hop, from the desired state to the members, each saying what it saw.

The hops are checked in the order a packet's fate depends on them: the database (is the
desired state settled?), the converge job (was it applied, or why not?), TLS (can the
certificate references still be read, and how long are they valid? ``certificates.py``),
the amphorae (is each heard from?), the agent (does it know the amphora?), HAProxy
(running, and with which applied version?), the VIP (does each listener answer the
agents' own probes, and a connect from here?), the members (which are down, and why?).
The first hop that fails is usually the answer; later ones are still shown, since
an operator fixing one wants to know what else is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

from lbaas.db.health.stats_repo import ProbeFacts
from lbaas.db.jobs.job_queue import JobFacts
from lbaas.db.loadbalancers.facts import LoadBalancerFacts
from lbaas.diagnose.base import AgentView, VipProbe
from lbaas.errors import AgentUnreachable
from lbaas.model.enums import ListenerProtocol, OperatingStatus, ProvisioningStatus
from lbaas.wire.amphora import AmphoraStatus as AgentAmphora

_PROBED = frozenset(
    {
        ListenerProtocol.HTTP,
        ListenerProtocol.HTTPS,
        ListenerProtocol.TERMINATED_HTTPS,
        ListenerProtocol.PROMETHEUS,
        ListenerProtocol.TCP,
    }
)
_FINE_MEMBER = frozenset({OperatingStatus.ONLINE, OperatingStatus.NO_MONITOR})


class Level(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True)
class Verdict:
    hop: str
    level: Level
    detail: str


def database_hop(facts: LoadBalancerFacts) -> Verdict:
    lb = facts.tree
    seen = f"provisioning {lb.provisioning_status}, operating {lb.operating_status}"
    if lb.provisioning_status == ProvisioningStatus.ERROR:
        # The desired state is stored; why it is not served is the converge hop's to say.
        return Verdict("database", Level.WARN, f"{seen}: see the converge hop")
    if lb.provisioning_status != ProvisioningStatus.ACTIVE:
        return Verdict("database", Level.WARN, f"{seen}: a change is being applied")
    if not lb.admin_state_up:
        return Verdict("database", Level.WARN, f"{seen}; disabled (admin_state_up false)")
    return Verdict("database", Level.OK, seen)


def converge_hop(job: JobFacts | None, lb_in_error: bool, now: float) -> Verdict:
    if job is None:
        return Verdict("converge", Level.WARN, "no converge job recorded")
    error = f"; last error: {job.last_error}" if job.last_error else ""
    if job.requested_gen <= job.done_gen:
        level = Level.FAIL if lb_in_error else Level.OK
        return Verdict("converge", level, f"generation {job.done_gen} settled{error}")
    pending = f"generation {job.requested_gen} wanted, {job.done_gen} settled"
    if job.lease_owner and (job.lease_expires_at or 0) >= now:
        return Verdict("converge", Level.WARN, f"{pending}: converging now ({job.lease_owner})")
    if job.next_attempt_at > now:
        wait = job.next_attempt_at - now
        detail = f"{pending}: attempt {job.attempts} failed, retry in {wait:.1f}s{error}"
        return Verdict("converge", Level.FAIL, detail)
    waited = now - job.next_attempt_at
    return Verdict("converge", Level.WARN, f"{pending}: waiting {waited:.1f}s for a worker")


def amphora_hops(
    facts: LoadBalancerFacts, agent: AgentView, stale_after: float, now: float
) -> Iterator[Verdict]:
    """Per amphora: heard from, its agent, its HAProxy."""
    if not facts.amphorae:
        yield Verdict("amphora", Level.SKIP, f"no amphora (provider {facts.tree.provider})")
        return
    for amp in facts.amphorae:
        yield _heard(
            amp.id, amp.host, amp.last_heartbeat_at, amp.failover_pending, stale_after, now
        )
        try:
            status = agent.amphora(amp.host, amp.id)
        except AgentUnreachable as exc:
            detail = f"agent of amphora {amp.id} on {amp.host or '?'} unreachable: {exc.operator_message}"
            yield Verdict("agent", Level.FAIL, detail)
            yield Verdict("haproxy", Level.SKIP, "unknown: the agent cannot be asked")
            continue
        if status is None:
            yield Verdict("agent", Level.FAIL, f"the agent on {amp.host} does not know {amp.id}")
            continue
        yield Verdict("agent", Level.OK, f"amphora {amp.id} on {amp.host}: known to its agent")
        yield haproxy_hop(status)


def _heard(
    amphora_id: str,
    host: str | None,
    last: float | None,
    failover_pending: bool,
    stale_after: float,
    now: float,
) -> Verdict:
    where = f"amphora {amphora_id} on {host or '?'}"
    if failover_pending:
        return Verdict("amphora", Level.FAIL, f"{where}: failover requested, not yet done")
    if last is None:
        return Verdict("amphora", Level.FAIL, f"{where}: never heard from")
    age = now - last
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


def vip_hops(
    facts: LoadBalancerFacts, probe: VipProbe, stale_after: float, now: float
) -> Iterator[Verdict]:
    """Per enabled listener: does its VIP:port answer?

    Two witnesses: the agents' own probes (``lbaas.amphora.vip_probe``), made from where a
    client's connection arrives at the amphora and carried by their heartbeats, and a
    connect from here. The agents' word decides when an amphora heard from recently
    probed: "here" may simply not route to the VIP (netns mode, another host), while the
    amphora's side is exactly the path clients take. Both saying no is a failure; the
    agents saying no while it answers from here is a warning (their probe may be older
    than the listener, made up to a probe interval plus a heartbeat ago). With no fresh
    agent probe (probing off, an older agent, a silent amphora, the noop provider), the
    check from here decides.
    """
    graph = facts.graph
    listeners = [li for li in graph.listeners if li.admin_state_up]
    if not listeners:
        yield Verdict("vip", Level.SKIP, "no enabled listener")
        return
    heard = {
        amp.id
        for amp in facts.amphorae
        if amp.last_heartbeat_at is not None and now - amp.last_heartbeat_at <= stale_after
    }
    for listener in listeners:
        where = f"listener {listener.id} {listener.protocol} {graph.vip.address}:{listener.protocol_port}"
        fresh = [p for p in facts.probes.get(listener.id, []) if p.amphora_id in heard]
        agents = _agents_saw(fresh)
        here: bool | None = None
        if listener.protocol in _PROBED:
            here = probe.answers(graph.vip.address, listener)
        said_here = {None: "", True: "; from here: answers", False: "; from here: no answer"}[here]
        if agents is None and here is None:
            yield Verdict("vip", Level.SKIP, f"{where}: not probed (not a TCP protocol)")
        elif agents is None:
            level = Level.OK if here else Level.FAIL
            verb = "answers" if here else "does not answer"
            yield Verdict("vip", level, f"{where}: {verb} (no agent probe; checked from here)")
        elif not any(p.answered for p in fresh) and here:
            # The witnesses disagree: the probe may predate a change (a listener just
            # created), or only clients' path is broken. Worth a look, not a verdict.
            detail = f"{where}: answers from here, but not the agents' latest probe ({agents})"
            yield Verdict("vip", Level.WARN, detail)
        elif not any(p.answered for p in fresh):
            healthy = _members_fine(facts, listener.default_pool_id)
            why = "; its members are healthy: the break is between clients and the VIP"
            detail = f"{where}: does not answer ({agents}{said_here}){why if healthy else ''}"
            yield Verdict("vip", Level.FAIL, detail)
        elif here is False:
            detail = f"{where}: answers the agents' probe ({agents}) but not from here"
            yield Verdict("vip", Level.WARN, f"{detail}: this host may not route to the VIP")
        else:
            yield Verdict("vip", Level.OK, f"{where}: answers ({agents}{said_here})")


def _agents_saw(fresh: list[ProbeFacts]) -> str | None:
    """The agents' probe results in words, None when no fresh one exists."""
    if not fresh:
        return None
    said = ", ".join(
        f"amphora {p.amphora_id}: {'answers' if p.answered else 'no answer'}" for p in fresh
    )
    return f"agent probe from {said}"


def _members_fine(facts: LoadBalancerFacts, pool_id: str | None) -> bool:
    """Whether the pool has members and every enabled one is healthy."""
    pool = next((p for p in facts.tree.pools if p.id == pool_id), None)
    members = [m for m in pool.members if m.admin_state_up] if pool is not None else []
    return bool(members) and all(m.operating_status in _FINE_MEMBER for m in members)


def member_hops(facts: LoadBalancerFacts) -> Iterator[Verdict]:
    pools = facts.tree.pools
    if not any(pool.members for pool in pools):
        yield Verdict("members", Level.SKIP, "no member")
        return
    for pool in pools:
        for m in pool.members:
            where = f"member {m.id} {m.address}:{m.protocol_port} (pool {pool.id})"
            status = m.operating_status
            if not m.admin_state_up:
                yield Verdict("members", Level.WARN, f"{where}: disabled (admin_state_up false)")
            elif status == OperatingStatus.ERROR:
                why = "failing its health check" if pool.health_monitor else "reported down"
                yield Verdict("members", Level.FAIL, f"{where}: {status}, {why}")
            elif status in _FINE_MEMBER:
                yield Verdict("members", Level.OK, f"{where}: {status}")
            else:
                yield Verdict("members", Level.WARN, f"{where}: {status}")
