"""The amphorae of this host: converge each to its spec, supervise, report, delete.

One directory per amphora under ``root`` holds its HAProxy files and ``applied.json`` (the
last spec applied successfully), which is how an agent that restarts finds its amphorae
again and how an older version is refused; a repeated PUT is recognised by
``HaproxyInstance``, which asks the running HAProxy what it loaded. A stored spec of a format
this agent cannot read is logged and its amphora left out. Each amphora has its own lock, so the API and
the supervise loop never work on the same amphora at once while different amphorae proceed
in parallel.

A PUT converges in two steps: plumbing (netns mode only; idempotent ``HostOps`` calls) and
``HaproxyInstance.apply`` with the spec's text and the facts sent beside it (which does
nothing when HAProxy already runs that text). Failures are recorded
as the amphora's ``last_error`` and raised for the API to answer with.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from lbaas.agent.access_log import LAST_LINES_HOLD, AccessLogs
from lbaas.agent.datapath import AmphoraDatapath
from lbaas.agent.haproxy_process import (
    ApplyOutcome,
    HaproxyInstance,
    ReloadGuard,
    RuntimeApiFactory,
)
from lbaas.agent.host.base import HostOps, KeepalivedOps
from lbaas.agent.host.loopback import is_loopback_address
from lbaas.agent.ledger_store import LEDGER_FILE
from lbaas.agent.plumbing import (
    DEFAULT_NAMESPACE_PREFIX,
    AmphoraPlumbing,
    apply_plumbing,
    namespace_name,
    plan_plumbing,
    remove_plumbing,
    vip_leg,
)
from lbaas.agent.runtime_api import RuntimeApi, RuntimeApiError
from lbaas.agent.source_routing import apply_routing, plan_routing
from lbaas.agent.stats import StatsCollector
from lbaas.agent.tls_files import prune_tls_files, write_tls_files
from lbaas.agent.udp_health import CheckerFactory
from lbaas.agent.vip_probe import ProbeSubject
from lbaas.agent.vrrp import KeepalivedInstance, allow_nonlocal_bind, vrrp_config
from lbaas.agent.wire import (
    AMPHORA_ID_PATTERN,
    AmphoraSpec,
    AmphoraStatus,
)
from lbaas.errors import Conflict, InvalidInput
from lbaas.l4.host.base import NftOps
from lbaas.l4.host.real import RealNftOps
from lbaas.model.graph import ListenerId, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.private_files import make_private_directory, write_private
from lbaas.render.haproxy.access_log import RING

log = logging.getLogger(__name__)

APPLIED_FILE = "applied.json"
#: Seconds a heartbeat waits for an amphora's statistics (shorter than any sane interval).
STATS_DEADLINE = 0.8
_UNIX_PATH_MAX = 107
AgentMode = Literal["loopback", "netns"]
#: Makes the nftables runner of one amphora namespace (tests pass a recording one).
NftOpsFactory = Callable[[str], NftOps]
#: Makes the health checker of one amphora's UDP members from its namespace and sink
#: (tests pass one with fake probes; the default probes from inside the namespace).
UdpCheckerFactory = Callable[[str], CheckerFactory]


@dataclass
class _Amphora:
    id: str
    instance: HaproxyInstance
    lock: threading.Lock = field(default_factory=threading.Lock)
    applied: AmphoraSpec | None = None
    stats: StatsCollector | None = None
    last_outcome: ApplyOutcome | None = None
    last_error: str | None = None
    keepalived: KeepalivedInstance | None = None
    vrrp_interface: str | None = None
    datapath: AmphoraDatapath | None = None
    held: bool = False
    """Adopted with HAProxy dead, and not restarted until the controller sends it again."""


def _stats_result(amphora_id: str, future: Future[HealthReport | None]) -> HealthReport | None:
    """A finished read's report; a read that failed costs only its own amphora's report."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - one amphora's failure must not stop the others
        log.warning("cannot read the statistics of amphora %s: %s", amphora_id, exc)
        return None


class AmphoraManager:
    """Every amphora this agent runs."""

    def __init__(
        self,
        root: Path,
        host: HostOps,
        *,
        mode: AgentMode = "loopback",
        runtime_api: RuntimeApiFactory = RuntimeApi.at,
        stats_threads: int = 16,
        namespace_prefix: str = DEFAULT_NAMESPACE_PREFIX,
        bridge_mappings: Mapping[str, str] | None = None,
        keepalived: KeepalivedOps | None = None,
        nft_ops: NftOpsFactory = RealNftOps,
        udp_checker: UdpCheckerFactory | None = None,
        access_logs: AccessLogs | None = None,
    ) -> None:
        self.root = root.absolute()
        # None: HAProxy's log lines have no reader here (configurations that log are dropped).
        self.access_logs = access_logs
        self._namespace_prefix = namespace_prefix
        self._bridge_mappings = dict(bridge_mappings or {})
        self._nft_ops = nft_ops
        # None: each amphora's UDP members are probed from inside its namespace.
        self._udp_checker = udp_checker
        self.mode = mode
        self._host = host
        # ACTIVE_STANDBY amphorae (netns mode only) run keepalived through this.
        self._keepalived_ops = keepalived
        self._runtime_api = runtime_api
        self._lock = threading.Lock()
        self._stats_pool = ThreadPoolExecutor(
            max_workers=stats_threads, thread_name_prefix="amphora-stats"
        )
        self._stats_reads: dict[str, Future[HealthReport | None]] = {}
        # The reads a round sent out in time (the next round must not send them again).
        self._stats_delivered: set[Future[HealthReport | None]] = set()
        self._stats_lock = threading.Lock()
        self._amphorae: dict[str, _Amphora] = {}

    def restore(self, *, hold_dead: bool = False) -> list[str]:
        """Load the amphorae an earlier agent left in ``root``; the supervisor restarts them.

        With ``hold_dead`` (an enrolled fleet host), one whose HAProxy is not running is
        held instead: the controller may have moved its VIP elsewhere meanwhile.
        """
        make_private_directory(self.root)
        found = []
        for applied in sorted(self.root.glob(f"*/{APPLIED_FILE}")):
            amphora_id = applied.parent.name
            try:
                spec = AmphoraSpec.model_validate_json(json.loads(applied.read_bytes())["spec"])
            except (OSError, ValueError, KeyError) as exc:
                log.error("cannot restore amphora %s from %s: %s", amphora_id, applied, exc)
                continue
            amp = self._entry(amphora_id)
            amp.applied = spec
            amp.stats = self._collector(amp, spec)
            self._read_access_log(amp, spec)
            if spec.vrrp is not None and self._keepalived_ops is not None:
                amp.keepalived = self._keepalived_of(amp)
                amp.vrrp_interface = vip_leg(self._plan(amphora_id, spec), spec).amphora_end
            if hold_dead and amp.instance.master_pid() is None:
                amp.held = True
                log.warning("amphora %s adopted with HAProxy stopped: held", amphora_id)
            if self.mode == "netns":
                # Its kernel tables outlived the old agent: read them for heartbeats now,
                # not only after the controller's next PUT.
                namespace = self._namespace(amphora_id)
                amp.datapath = self._datapath(namespace)
                try:
                    if self._host.namespace_exists(namespace):
                        amp.datapath.resume(spec)  # its UDP members are checked again
                except OSError as exc:  # the controller's next PUT starts them again
                    log.error("UDP health checks of amphora %s not resumed: %s", amphora_id, exc)
            found.append(amphora_id)
        return found

    def amphora_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._amphorae)

    def probe_subjects(self) -> list[ProbeSubject]:
        """What ``VipProber`` connects to: each applied amphora's VIP and TCP listener ports."""
        with self._lock:
            applied = [(a.id, a.applied) for a in self._amphorae.values() if not a.held]
        return [
            ProbeSubject(
                amphora_id=amphora_id,
                address=spec.vip.address,
                ports={ListenerId(p.listener_id): p.port for p in spec.vip_probes},
                namespace=self._namespace(amphora_id) if self.mode == "netns" else None,
            )
            for amphora_id, spec in applied
            if spec is not None and spec.vip_probes
        ]

    def vrrp_states(self) -> dict[str, str]:
        """Each ACTIVE_STANDBY amphora's VRRP state as its keepalived last reported it."""
        with self._lock:
            instances = [(a.id, a.keepalived) for a in self._amphorae.values()]
        states = {}
        for amphora_id, keepalived in instances:
            state = None if keepalived is None else keepalived.state()
            if state is not None:
                states[amphora_id] = state
        return states

    def put(self, amphora_id: str, spec: AmphoraSpec) -> AmphoraStatus:
        """Converge amphora ``amphora_id`` to ``spec``."""
        if self.mode == "loopback" and not is_loopback_address(spec.vip.address):
            raise InvalidInput(
                f"this agent runs in loopback mode; VIP {spec.vip.address} is not in 127.0.0.0/8"
            )
        if spec.vrrp is not None and (self.mode != "netns" or self._keepalived_ops is None):
            raise InvalidInput(
                "ACTIVE_STANDBY (VRRP) needs an agent in netns mode with keepalived; "
                f"this agent runs in {self.mode} mode"
            )
        if self.mode == "loopback" and spec.udp_listeners:
            raise InvalidInput(
                "UDP listeners are balanced in the kernel inside an amphora namespace; "
                "this agent runs in loopback mode (no namespaces)"
            )
        with self._locked(amphora_id) as amp:
            if amp.applied is not None and spec.version < amp.applied.version:
                raise Conflict(
                    f"amphora {amphora_id} has version {amp.applied.version} applied; "
                    f"refusing older version {spec.version}"
                )
            try:
                kernel_rules = None
                if self.mode == "netns":
                    previous = None if amp.applied is None else self._plan(amphora_id, amp.applied)
                    kernel_rules = self._plumb(amp, spec, previous)
                    if spec.vrrp is not None:
                        allow_nonlocal_bind(self._host, self._namespace(amphora_id))
                # A reload replaces the worker: the statistics hold it to read it to its end,
                # and its access-log ring is read last (its forwarder stopped at the reload).
                guard = None if amp.stats is None else self._reload_guard(amp, amp.stats)
                write_tls_files(amp.instance.directory, spec.tls_files)
                self._read_access_log(amp, spec)
                amp.last_outcome = amp.instance.apply(
                    spec.haproxy_config, spec.haproxy_facts, guard
                )
                self._apply_vrrp(amp, spec)
                prune_tls_files(amp.instance.directory, spec.tls_files)
                if amp.datapath is not None and kernel_rules is not None:
                    amp.datapath.apply(spec, kernel_rules)
            except Exception as exc:
                amp.last_error = str(getattr(exc, "operator_message", None) or exc)
                raise
            self._save(amp, spec)
            amp.last_error = None
            amp.held = False
            return self._status(amp)

    def get(self, amphora_id: str) -> AmphoraStatus | None:
        with self._lock:
            amp = self._amphorae.get(amphora_id)
        return None if amp is None else self._status(amp)

    def delete(self, amphora_id: str) -> None:
        """Stop HAProxy, remove plumbing and files. Idempotent."""
        with self._locked(amphora_id) as amp:
            # keepalived first: a MASTER that stops hands the VIP over (priority 0) at once.
            if amp.keepalived is not None:
                amp.keepalived.stop()
            amp.instance.stop()
            if self.mode == "netns":
                spec = amp.applied
                plumbing = (
                    AmphoraPlumbing(self._namespace(amphora_id), ())
                    if spec is None
                    else self._plan(amphora_id, spec)
                )
                remove_plumbing(self._host, plumbing)
            if amp.datapath is not None:
                amp.datapath.close()
            if self.access_logs is not None:
                self.access_logs.close(amphora_id)
            shutil.rmtree(amp.instance.directory, ignore_errors=True)
            with self._lock:
                self._amphorae.pop(amphora_id, None)

    def supervise(self) -> list[str]:
        """Restart every HAProxy whose master died; the ids of those restarted."""
        restarted = []
        for amphora_id in self.amphora_ids():
            with self._lock:
                amp = self._amphorae.get(amphora_id)
            if amp is None or amp.applied is None or amp.held:
                continue
            with amp.lock:
                with self._lock:
                    if self._amphorae.get(amphora_id) is not amp:
                        continue  # deleted meanwhile: nothing to bring back
                # Top of the supervise loop: one broken amphora must not stop the others.
                try:
                    if self.mode == "netns" and not self._host.namespace_exists(
                        self._namespace(amphora_id)
                    ):
                        if amp.datapath is not None:
                            amp.datapath.close()
                        amp.datapath = None  # its tables went with the namespace
                        rules = self._plumb(amp, amp.applied, None)
                        if amp.datapath is not None:
                            amp.datapath.apply(amp.applied, rules)
                    if amp.instance.ensure_running():
                        restarted.append(amphora_id)
                        log.warning("restarted haproxy of amphora %s", amphora_id)
                    if amp.keepalived is not None and amp.keepalived.ensure_running():
                        log.warning("restarted keepalived of amphora %s", amphora_id)
                except Exception as exc:  # noqa: BLE001 - logged with the id, kept as last_error
                    amp.last_error = str(exc)
                    log.error("cannot supervise amphora %s: %s", amphora_id, exc)
        return restarted

    def health_reports(self) -> list[tuple[str, HealthReport]]:
        """(amphora id, report) for every amphora whose statistics can be read now.

        Amphorae are read in parallel, and whatever has not answered within
        ``STATS_DEADLINE`` is left out: one hung HAProxy must cost only
        its own heartbeat, never every other amphora's on this host. An amphora whose
        read from an earlier round is still stuck is not read again until it ends, so
        a hung HAProxy holds one thread of the pool, not one more every round.

        A read that ended after its round's deadline is still a valid total, at most an
        interval old: it goes out with the next round when that round's own read is late
        too. Dropping it would leave an amphora whose reads always take a little longer
        than the deadline (a busy host, UDP listeners read through nft and conntrack)
        without statistics at all.
        """
        futures: dict[Future[HealthReport | None], str] = {}
        finished_late: dict[str, Future[HealthReport | None]] = {}
        with self._stats_lock:
            reads, self._stats_reads = self._stats_reads, {}
            for amphora_id in self.amphora_ids():
                pending = reads.get(amphora_id)
                if pending is not None and not pending.done():
                    self._stats_reads[amphora_id] = pending
                    continue
                if pending is not None and pending not in self._stats_delivered:
                    finished_late[amphora_id] = pending
                future = self._stats_pool.submit(self._read_stats, amphora_id)
                self._stats_reads[amphora_id] = future
                futures[future] = amphora_id
        done, _late = wait(futures, timeout=STATS_DEADLINE)
        reports = []
        for future, amphora_id in futures.items():
            chosen = future if future in done else finished_late.get(amphora_id)
            report = None if chosen is None else _stats_result(amphora_id, chosen)
            if report is not None:
                reports.append((amphora_id, report))
        with self._stats_lock:
            # Remember only this round's delivered reads: the next round looks at no other.
            self._stats_delivered = {future for future in done}
        return sorted(reports, key=lambda item: item[0])

    def _read_stats(self, amphora_id: str) -> HealthReport | None:
        with self._lock:
            amp = self._amphorae.get(amphora_id)
        stats = None if amp is None else amp.stats
        if amp is None or stats is None:
            return None
        # Without the amphora's lock: a reload in progress must not delay heartbeats.
        api = amp.instance.runtime()
        if api is None or amp.instance.master_pid() is None:
            return None
        try:
            report = stats.collect(api, amp.instance.master_cli())
            datapath, spec = amp.datapath, amp.applied
            if datapath is None or spec is None or not spec.udp_listeners:
                return report
            listeners, pools = datapath.health(spec)
            return dataclasses.replace(
                report,
                listeners={**report.listeners, **listeners},
                pools={**report.pools, **pools},
            )
        except RuntimeApiError as exc:
            log.info("no statistics from amphora %s: %s", amphora_id, exc)
            return None

    def stop_all(self) -> None:
        """Stop every HAProxy but keep files and plumbing (agent shutdown in tests)."""
        for amphora_id in self.amphora_ids():
            with self._lock:
                amp = self._amphorae.get(amphora_id)
            if amp is not None:
                with amp.lock:
                    if amp.keepalived is not None:
                        amp.keepalived.stop()
                    amp.instance.stop()
                    if amp.datapath is not None:
                        amp.datapath.close()
        if self.access_logs is not None:
            self.access_logs.close_all()

    def _reload_guard(self, amp: _Amphora, stats: StatsCollector) -> ReloadGuard:
        logs = self.access_logs
        if logs is None:
            return stats.across_reload

        def extra_read(api: RuntimeApi, pid: int) -> None:
            try:
                logs.recover(amp.id, pid, api.show_events(RING))
            except RuntimeApiError as exc:
                log.warning("access log of replaced worker %d not read: %s", pid, exc)

        return partial(stats.across_reload, extra_read=extra_read, limit=LAST_LINES_HOLD)

    def _read_access_log(self, amp: _Amphora, spec: AmphoraSpec) -> None:
        """Bind the log socket before the HAProxy that sends to it starts (or stop reading).

        The controller renders the ``log`` line only with connection logging on, so the
        configuration naming this amphora's socket is what asks for a reader.
        """
        if self.access_logs is None:
            return
        sock = self.access_logs.socket_directory / f"{amp.id}.sock"
        if str(sock) in spec.haproxy_config:
            group = self._host.haproxy_run_as()
            self.access_logs.ensure(
                amp.id, spec.loadbalancer_id, sock, None if group is None else group[1]
            )
        else:
            self.access_logs.close(amp.id)

    @contextmanager
    def _locked(self, amphora_id: str) -> Iterator[_Amphora]:
        """The amphora's entry, locked, and still the registered one (not just deleted)."""
        while True:
            amp = self._entry(amphora_id)
            with amp.lock:
                with self._lock:
                    current = self._amphorae.get(amphora_id) is amp
                if current:
                    yield amp
                    return

    def _entry(self, amphora_id: str) -> _Amphora:
        if re.fullmatch(AMPHORA_ID_PATTERN, amphora_id) is None:
            raise InvalidInput(f"invalid amphora id {amphora_id!r}")
        if len(str(self.root / amphora_id / "master.sock")) > _UNIX_PATH_MAX:
            raise InvalidInput(f"amphora id {amphora_id!r} is too long for this agent's paths")
        with self._lock:
            amp = self._amphorae.get(amphora_id)
            if amp is None:
                instance = HaproxyInstance(
                    self.root / amphora_id,
                    self._host,
                    namespace=self._namespace(amphora_id) if self.mode == "netns" else None,
                    runtime_api=self._runtime_api,
                )
                amp = self._amphorae[amphora_id] = _Amphora(amphora_id, instance)
            return amp

    def _keepalived_of(self, amp: _Amphora) -> KeepalivedInstance:
        if self._keepalived_ops is None:
            raise InvalidInput("this agent runs no keepalived (ACTIVE_STANDBY needs it)")
        namespace = self._namespace(amp.id)
        return KeepalivedInstance(amp.instance.directory, self._keepalived_ops, namespace)

    def _apply_vrrp(self, amp: _Amphora, spec: AmphoraSpec) -> None:
        """Converge keepalived to ``spec``: configure it, or stop it for a SINGLE spec."""
        if spec.vrrp is None:
            if amp.keepalived is not None:
                amp.keepalived.stop()
                amp.keepalived, amp.vrrp_interface = None, None
            return
        if amp.keepalived is None:
            amp.keepalived = self._keepalived_of(amp)
        interface = vip_leg(self._plan(amp.id, spec), spec).amphora_end
        socket = spec.haproxy_facts.runtime_socket
        state_file = amp.keepalived.files.state_file
        amp.keepalived.apply(vrrp_config(amp.id, spec, spec.vrrp, interface, socket, state_file))
        amp.vrrp_interface = interface

    def _namespace(self, amphora_id: str) -> str:
        return namespace_name(amphora_id, self._namespace_prefix)

    def _plan(self, amphora_id: str, spec: AmphoraSpec) -> AmphoraPlumbing:
        return plan_plumbing(
            amphora_id,
            spec,
            namespace_prefix=self._namespace_prefix,
            bridge_mappings=self._bridge_mappings,
        )

    def _plumb(self, amp: _Amphora, spec: AmphoraSpec, previous: AmphoraPlumbing | None) -> str:
        """Legs, routing and the checked nftables rules (returned, loaded after HAProxy)."""
        plan = self._plan(amp.id, spec)
        apply_plumbing(self._host, plan, previous)
        apply_routing(self._host, plan_routing(plan, spec.vip.address, spec.vip.network_id))
        if amp.datapath is None:
            amp.datapath = self._datapath(plan.namespace)
        vip_leg = next(leg for leg in plan.legs if leg.network_id == spec.vip.network_id)
        return amp.datapath.check(spec, vip_leg.amphora_end)

    def _datapath(self, namespace: str) -> AmphoraDatapath:
        checker = None if self._udp_checker is None else self._udp_checker(namespace)
        return AmphoraDatapath(self._host, self._nft_ops(namespace), namespace, checker)

    def _save(self, amp: _Amphora, spec: AmphoraSpec) -> None:
        if amp.applied is None or amp.applied.loadbalancer_id != spec.loadbalancer_id:
            amp.stats = self._collector(amp, spec)
        amp.applied = spec
        path = amp.instance.directory / APPLIED_FILE
        write_private(path, json.dumps({"spec": spec.model_dump_json()}))

    def _collector(self, amp: _Amphora, spec: AmphoraSpec) -> StatsCollector:
        """Statistics for ``spec``'s load balancer, resuming the ledger stored beside it."""
        store = amp.instance.directory / LEDGER_FILE
        return StatsCollector(LoadBalancerId(spec.loadbalancer_id), store=store)

    def _status(self, amp: _Amphora) -> AmphoraStatus:
        pid = amp.instance.master_pid()
        return AmphoraStatus(
            amphora_id=amp.id,
            loadbalancer_id=None if amp.applied is None else amp.applied.loadbalancer_id,
            applied_version=None if amp.applied is None else amp.applied.version,
            running=pid is not None,
            master_pid=pid,
            namespace=amp.instance.namespace,
            reloads=amp.instance.reloads,
            restarts=amp.instance.restarts,
            runtime_changes=amp.instance.runtime_changes,
            last_outcome=None if amp.last_outcome is None else amp.last_outcome.value,
            last_error=amp.last_error,
            vrrp_interface=amp.vrrp_interface,
            keepalived_pid=None if amp.keepalived is None else amp.keepalived.pid(),
            vrrp_state=None if amp.keepalived is None else amp.keepalived.state(),
        )
