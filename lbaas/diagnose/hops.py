"""One verdict per hop, from the desired state to the members, each saying what it saw.

The hops are checked in the order a packet's fate depends on them: the database (is the
desired state settled?), the converge job (was it applied, or why not?), TLS (can the
certificate references still be read, and how long are they valid? ``certificates.py``),
the amphorae (is each heard from?), the agent (does it know the amphora?), HAProxy
(running, and with which applied version? ``agent_hops.py``), the VIP (does each listener
answer the agents' probes, and is it the amphora's HAProxy alone that listens there?), the
members (which are down, and why, in HAProxy's words?). The first hop that fails is
usually the answer; later ones are still shown, since an operator fixing one wants to
know what else is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from lbaas.db.health.stats_repo import ProbeFacts
from lbaas.db.jobs.job_queue import JobFacts
from lbaas.db.loadbalancers.facts import LoadBalancerFacts
from lbaas.diagnose.agent_hops import AgentLooks
from lbaas.diagnose.base import VipProbe
from lbaas.diagnose.verdict import Level, Verdict
from lbaas.model.enums import ListenerProtocol, OperatingStatus, ProvisioningStatus
from lbaas.model.graph import Listener
from lbaas.render.haproxy.names import parse_server_name
from lbaas.wire.amphora_diagnosis import ServerCheck

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

__all__ = ["Level", "Verdict", "converge_hop", "database_hop", "member_hops", "vip_hops"]


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


def vip_hops(
    facts: LoadBalancerFacts, probe: VipProbe, stale_after: float, now: float, looks: AgentLooks
) -> Iterator[Verdict]:
    """Per enabled listener: does its VIP:port answer, and is it the amphora's alone?

    The witnesses are the agents: their periodic probes (``lbaas.amphora.vip_probe``),
    carried by the heartbeats of amphorae heard within ``stale_after``, and the connect
    each reachable agent makes when asked now (it supersedes its amphora's periodic one).
    Both come from where a client's connection arrives at the amphora and from the probe
    source every frontend rejects before logging, so neither enters the tenant's access
    log. A connect from here would (it is a client like any other), so a load balancer
    with amphorae is never probed from here; one without (the noop provider) is, since
    nothing of lbaas's logs it. Any witness answering is well, none is a failure. A
    process other than the amphora's HAProxy listening on the VIP:port fails the hop
    whatever answers: it takes part of the connections.
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
        verdict = _answers(facts, listener, probe, _witnesses(facts, listener, heard, looks))
        foreign = _foreign(listener, looks)
        if foreign:
            detail = f"{where}: {foreign}, and {verdict.detail}"
            yield Verdict("vip", Level.FAIL, detail)
        else:
            yield Verdict("vip", verdict.level, f"{where}: {verdict.detail}")


Witness = tuple[ProbeFacts, bool, str | None]
"""One amphora's probe of a listener: what it found, whether made now, why it failed."""


def _witnesses(
    facts: LoadBalancerFacts, listener: Listener, heard: set[str], looks: AgentLooks
) -> list[Witness]:
    """Per amphora: its agent's connect now, else its fresh heartbeat's probe."""
    found: dict[str, Witness] = {
        p.amphora_id: (p, False, None) for p in facts.probes.get(listener.id, [])
    }
    found = {amp: seen for amp, seen in found.items() if amp in heard}
    for amphora_id, look in looks.seen.items():
        for port in look.vip_ports:
            if port.listener_id == listener.id:
                found[amphora_id] = (ProbeFacts(amphora_id, port.answers), True, port.error)
    return [found[amp] for amp in sorted(found)]


def _answers(
    facts: LoadBalancerFacts,
    listener: Listener,
    probe: VipProbe,
    witnesses: list[Witness],
) -> Verdict:
    """Whether the listener answers; the detail without the listener's name."""
    if witnesses:
        said = ", ".join(
            f"amphora {p.amphora_id}: {'answers' if p.answered else 'no answer'}"
            + (" now" if made_now else "")
            + (f" ({error})" if error and not p.answered else "")
            for p, made_now, error in witnesses
        )
        if any(p.answered for p, _, _ in witnesses):
            return Verdict("vip", Level.OK, f"answers (agent probe from {said})")
        healthy = _members_fine(facts, listener.default_pool_id)
        why = "; its members are healthy: the break is between clients and the VIP"
        detail = f"does not answer (agent probe from {said}){why if healthy else ''}"
        return Verdict("vip", Level.FAIL, detail)
    if listener.protocol not in _PROBED:
        return Verdict("vip", Level.SKIP, "not probed (not a TCP protocol)")
    if facts.amphorae:
        detail = "not probed: no agent probe, and one from here would enter the access log"
        return Verdict("vip", Level.SKIP, detail)
    if probe.answers(facts.graph.vip.address, listener):
        return Verdict("vip", Level.OK, "answers (no agent probe; checked from here)")
    return Verdict("vip", Level.FAIL, "does not answer (no agent probe; checked from here)")


def _foreign(listener: Listener, looks: AgentLooks) -> str:
    """The processes other than the amphora's HAProxy listening on the VIP:port, in words."""
    said = []
    for amphora_id, look in sorted(looks.seen.items()):
        ours = ", ".join(str(pid) for pid in look.haproxy_pids) or "none running"
        for port in look.vip_ports:
            if port.listener_id != listener.id or not port.foreign:
                continue
            others = "; ".join(
                f"pid {p.pid} ({p.command})" if p.pid is not None else f"an unreadable {p.command}"
                for p in port.foreign
            )
            said.append(
                f"also listened on by {others}, not amphora {amphora_id}'s HAProxy "
                f"(pids {ours}): new connections are split between them"
            )
    return "; ".join(said)


def _members_fine(facts: LoadBalancerFacts, pool_id: str | None) -> bool:
    """Whether the pool has members and every enabled one is healthy."""
    pool = next((p for p in facts.tree.pools if p.id == pool_id), None)
    members = [m for m in pool.members if m.admin_state_up] if pool is not None else []
    return bool(members) and all(m.operating_status in _FINE_MEMBER for m in members)


def member_hops(facts: LoadBalancerFacts, looks: AgentLooks) -> Iterator[Verdict]:
    pools = facts.tree.pools
    if not any(pool.members for pool in pools):
        yield Verdict("members", Level.SKIP, "no member")
        return
    checks = server_checks_by_member(looks)
    for pool in pools:
        for m in pool.members:
            where = f"member {m.id} {m.address}:{m.protocol_port} (pool {pool.id})"
            status = m.operating_status
            if not m.admin_state_up:
                yield Verdict("members", Level.WARN, f"{where}: disabled (admin_state_up false)")
            elif status == OperatingStatus.ERROR:
                why = "failing its health check" if pool.health_monitor else "reported down"
                said = _checks_said(checks.get(m.id, []))
                yield Verdict("members", Level.FAIL, f"{where}: {status}, {why}{said}")
            elif status in _FINE_MEMBER:
                yield Verdict("members", Level.OK, f"{where}: {status}")
            else:
                said = _checks_said(checks.get(m.id, []))
                yield Verdict("members", Level.WARN, f"{where}: {status}{said}")


def server_checks_by_member(looks: AgentLooks) -> Mapping[str, list[tuple[str, ServerCheck]]]:
    """(amphora id, HAProxy's check) per member id, from the agents' looks."""
    found: dict[str, list[tuple[str, ServerCheck]]] = {}
    for amphora_id, look in sorted(looks.seen.items()):
        for server in look.servers:
            member_id = parse_server_name(server.server)
            if member_id is not None:
                found.setdefault(member_id, []).append((amphora_id, server))
    return found


def _checks_said(checks: list[tuple[str, ServerCheck]]) -> str:
    """``; HAProxy on amphora A: DOWN, L4CON (Layer4 connection problem): Connection
    refused`` for each amphora's HAProxy that holds the server."""
    said = []
    for amphora_id, check in checks:
        words = f"{check.status}"
        if check.check_status:
            code = f" {check.check_code}" if check.check_code else ""
            desc = f" ({check.check_desc})" if check.check_desc else ""
            words += f", last check {check.check_status}{code}{desc}"
        if check.last_check:
            words += f": {check.last_check}"
        said.append(f"; HAProxy on amphora {amphora_id}: {words}")
    return "".join(said)
