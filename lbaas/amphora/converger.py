"""One amphora of this host: converged to its spec, supervised, read and removed.

An ``AmphoraConverger`` owns everything of one amphora: its HAProxy (``HaproxyInstance``),
its keepalived for ACTIVE_STANDBY, its kernel data path in netns mode, its statistics and
its directory, which holds ``applied.json`` (the last spec applied successfully). Its lock
is held by whoever works on it, so the API and the supervise loop never change one amphora
at once while different amphorae proceed in parallel (``AmphoraRegistry`` keeps them).

A converge has two steps: plumbing (netns mode only; idempotent ``HostOps`` calls) and
``HaproxyInstance.apply`` with the spec's text and the facts sent beside it (which does
nothing when HAProxy already runs that text). Failures are recorded as the amphora's
``last_error`` and raised for the API to answer with.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from lbaas.amphora.access_log import LAST_LINES_HOLD, AccessLogs
from lbaas.amphora.datapath import AmphoraDatapath
from lbaas.amphora.haproxy_process import (
    ApplyOutcome,
    HaproxyInstance,
    ReloadGuard,
    RuntimeApiFactory,
)
from lbaas.amphora.ledger_store import LEDGER_FILE
from lbaas.amphora.plumbing import (
    AmphoraPlumbing,
    Announcement,
    announce,
    apply_plumbing,
    namespace_name,
    plan_plumbing,
    remove_plumbing,
    vip_leg,
)
from lbaas.amphora.source_routing import apply_routing, plan_routing
from lbaas.amphora.stats import StatsCollector
from lbaas.amphora.tls_files import prune_tls_files, write_tls_files
from lbaas.amphora.udp_health import CheckerFactory
from lbaas.amphora.vip_probe import ProbeSubject
from lbaas.amphora.vrrp import KeepalivedInstance, allow_nonlocal_bind, vrrp_config
from lbaas.errors import Conflict, InvalidInput
from lbaas.host.base import HostOps, KeepalivedOps
from lbaas.host.loopback import is_loopback_address
from lbaas.host.runtime_api import RuntimeApi, RuntimeApiError
from lbaas.l4.host.base import NftOps
from lbaas.model.graph import ListenerId, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.private_files import write_private
from lbaas.render.haproxy.access_log import RING
from lbaas.wire.amphora import AmphoraSpec, AmphoraStatus

log = logging.getLogger(__name__)

APPLIED_FILE = "applied.json"
AgentMode = Literal["loopback", "netns"]
#: Makes the nftables runner of one amphora namespace (tests pass a recording one).
NftOpsFactory = Callable[[str], NftOps]
#: Makes the health checker of one amphora's UDP members from its namespace and sink
#: (tests pass one with fake probes; the default probes from inside the namespace).
UdpCheckerFactory = Callable[[str], CheckerFactory]


@dataclass(frozen=True)
class AmphoraSetup:
    """What every amphora of one agent shares: its host, its mode and how it is plumbed."""

    root: Path
    host: HostOps
    mode: AgentMode
    runtime_api: RuntimeApiFactory
    namespace_prefix: str
    bridge_mappings: Mapping[str, str]
    nft_ops: NftOpsFactory
    keepalived: KeepalivedOps | None = None
    """ACTIVE_STANDBY amphorae (netns mode only) run keepalived through this."""
    udp_checker: UdpCheckerFactory | None = None
    """None: each amphora's UDP members are probed from inside its namespace."""
    access_logs: AccessLogs | None = None
    """None: HAProxy's log lines have no reader here (configurations that log are dropped)."""

    def namespace(self, amphora_id: str) -> str:
        return namespace_name(amphora_id, self.namespace_prefix)

    def plan(self, amphora_id: str, spec: AmphoraSpec) -> AmphoraPlumbing:
        return plan_plumbing(
            amphora_id,
            spec,
            namespace_prefix=self.namespace_prefix,
            bridge_mappings=self.bridge_mappings,
        )

    def refuse_unsupported(self, spec: AmphoraSpec) -> None:
        """Raise ``InvalidInput`` for what this agent's mode cannot run."""
        if self.mode == "loopback" and not is_loopback_address(spec.vip.address):
            raise InvalidInput(
                f"this agent runs in loopback mode; VIP {spec.vip.address} is not in 127.0.0.0/8"
            )
        if spec.vrrp is not None and (self.mode != "netns" or self.keepalived is None):
            raise InvalidInput(
                "ACTIVE_STANDBY (VRRP) needs an agent in netns mode with keepalived; "
                f"this agent runs in {self.mode} mode"
            )
        if self.mode == "loopback" and spec.udp_listeners:
            raise InvalidInput(
                "UDP listeners are balanced in the kernel inside an amphora namespace; "
                "this agent runs in loopback mode (no namespaces)"
            )


@dataclass
class AmphoraConverger:
    """One amphora and everything it runs; callers hold ``lock`` around every change."""

    id: str
    setup: AmphoraSetup
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

    @classmethod
    def create(cls, amphora_id: str, setup: AmphoraSetup) -> AmphoraConverger:
        instance = HaproxyInstance(
            setup.root / amphora_id,
            setup.host,
            namespace=setup.namespace(amphora_id) if setup.mode == "netns" else None,
            runtime_api=setup.runtime_api,
        )
        return cls(amphora_id, setup, instance)

    @property
    def namespace(self) -> str:
        return self.setup.namespace(self.id)

    def adopt(self, spec: AmphoraSpec, *, hold_dead: bool) -> None:
        """Take over ``spec``, applied by an earlier agent; the supervisor restarts it."""
        self.applied = spec
        self.stats = self._collector(spec)
        self._read_access_log(spec)
        if spec.vrrp is not None and self.setup.keepalived is not None:
            self.keepalived = self._keepalived()
            self.vrrp_interface = vip_leg(self.setup.plan(self.id, spec), spec).amphora_end
        if hold_dead and self.instance.master_pid() is None:
            self.held = True
            log.warning("amphora %s adopted with HAProxy stopped: held", self.id)
        if self.setup.mode == "netns":
            # Its kernel tables outlived the old agent: read them for heartbeats now,
            # not only after the controller's next PUT.
            self.datapath = self._datapath()
            try:
                if self.setup.host.namespace_exists(self.namespace):
                    self.datapath.resume(spec)  # its UDP members are checked again
            except OSError as exc:  # the controller's next PUT starts them again
                log.error("UDP health checks of amphora %s not resumed: %s", self.id, exc)

    def converge(self, spec: AmphoraSpec) -> AmphoraStatus:
        """Make this amphora run ``spec``; refuses a version older than the one applied."""
        if self.applied is not None and spec.version < self.applied.version:
            raise Conflict(
                f"amphora {self.id} has version {self.applied.version} applied; "
                f"refusing older version {spec.version}"
            )
        try:
            self._apply(spec)
        except Exception as exc:
            self.last_error = str(getattr(exc, "operator_message", None) or exc)
            raise
        self._save(spec)
        self.last_error = None
        self.held = False
        return self.status()

    def _apply(self, spec: AmphoraSpec) -> None:
        kernel_rules = None
        announcements: list[Announcement] = []
        if self.setup.mode == "netns":
            previous = None if self.applied is None else self.setup.plan(self.id, self.applied)
            kernel_rules, announcements = self._plumb(spec, previous)
            if spec.vrrp is not None:
                allow_nonlocal_bind(self.setup.host, self.namespace)
        # A reload replaces the worker: the statistics hold it to read it to its end,
        # and its access-log ring is read last (its forwarder stopped at the reload).
        guard = None if self.stats is None else self._reload_guard(self.stats)
        write_tls_files(self.instance.directory, spec.tls_files)
        self._read_access_log(spec)
        self.last_outcome = self.instance.apply(spec.haproxy_config, spec.haproxy_facts, guard)
        self._apply_vrrp(spec)
        prune_tls_files(self.instance.directory, spec.tls_files)
        if self.datapath is not None and kernel_rules is not None:
            self.datapath.apply(spec, kernel_rules)
        announce(self.setup.host, announcements)

    def remove(self) -> None:
        """Stop HAProxy (and keepalived), remove plumbing and files."""
        # keepalived first: a MASTER that stops hands the VIP over (priority 0) at once.
        if self.keepalived is not None:
            self.keepalived.stop()
        self.instance.stop()
        if self.setup.mode == "netns":
            spec = self.applied
            plumbing = (
                AmphoraPlumbing(self.namespace, ())
                if spec is None
                else self.setup.plan(self.id, spec)
            )
            remove_plumbing(self.setup.host, plumbing)
        if self.datapath is not None:
            self.datapath.close()
        if self.setup.access_logs is not None:
            self.setup.access_logs.close(self.id)
        directory = self.instance.directory
        if directory.is_symlink():  # made from a spare: its files live in the slot
            target = directory.resolve()
            directory.unlink()  # first: a slot left without its link is a leftover
            shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(directory, ignore_errors=True)

    def supervise(self) -> bool:
        """Bring back what died (namespace, HAProxy, keepalived); True if HAProxy restarted."""
        applied = self.applied
        if applied is None or self.held:
            return False
        announcements: list[Announcement] = []  # only for a namespace made again
        if self.setup.mode == "netns" and not self.setup.host.namespace_exists(self.namespace):
            if self.datapath is not None:
                self.datapath.close()
            self.datapath = None  # its tables went with the namespace
            rules, announcements = self._plumb(applied, None)
            if self.datapath is not None:
                self.datapath.apply(applied, rules)
        restarted = self.instance.ensure_running()
        announce(self.setup.host, announcements)
        if self.keepalived is not None and self.keepalived.ensure_running():
            log.warning("restarted keepalived of amphora %s", self.id)
        return restarted

    def stop(self) -> None:
        """Stop every process but keep files and plumbing (agent shutdown in tests)."""
        if self.keepalived is not None:
            self.keepalived.stop()
        self.instance.stop()
        if self.datapath is not None:
            self.datapath.close()

    def read_stats(self) -> HealthReport | None:
        """This amphora's report now; None while it runs nothing or cannot be read.

        Called without the amphora's lock: a reload in progress must not delay heartbeats.
        """
        stats = self.stats
        api = self.instance.runtime()
        if stats is None or api is None or self.instance.master_pid() is None:
            return None
        try:
            report = stats.collect(api, self.instance.master_cli())
            datapath, spec = self.datapath, self.applied
            if datapath is None or spec is None or not spec.udp_listeners:
                return report
            listeners, pools = datapath.health(spec)
            return dataclasses.replace(
                report,
                listeners={**report.listeners, **listeners},
                pools={**report.pools, **pools},
            )
        except RuntimeApiError as exc:
            log.info("no statistics from amphora %s: %s", self.id, exc)
            return None

    def probe_subject(self) -> ProbeSubject | None:
        """What ``VipProber`` connects to on this amphora, if it serves probed listeners."""
        spec = self.applied
        if self.held or spec is None or not spec.vip_probes:
            return None
        return ProbeSubject(
            amphora_id=self.id,
            address=spec.vip.address,
            ports={ListenerId(p.listener_id): p.port for p in spec.vip_probes},
            namespace=self.namespace if self.setup.mode == "netns" else None,
        )

    def status(self) -> AmphoraStatus:
        pid = self.instance.master_pid()
        applied = self.applied
        return AmphoraStatus(
            amphora_id=self.id,
            loadbalancer_id=None if applied is None else applied.loadbalancer_id,
            applied_version=None if applied is None else applied.version,
            running=pid is not None,
            master_pid=pid,
            namespace=self.instance.namespace,
            reloads=self.instance.reloads,
            restarts=self.instance.restarts,
            runtime_changes=self.instance.runtime_changes,
            last_outcome=None if self.last_outcome is None else self.last_outcome.value,
            last_error=self.last_error,
            vrrp_interface=self.vrrp_interface,
            keepalived_pid=None if self.keepalived is None else self.keepalived.pid(),
            vrrp_state=None if self.keepalived is None else self.keepalived.state(),
        )

    def _reload_guard(self, stats: StatsCollector) -> ReloadGuard:
        logs = self.setup.access_logs
        if logs is None:
            return stats.across_reload

        def extra_read(api: RuntimeApi, pid: int) -> None:
            try:
                logs.recover(self.id, pid, api.show_events(RING))
            except RuntimeApiError as exc:
                log.warning("access log of replaced worker %d not read: %s", pid, exc)

        return partial(stats.across_reload, extra_read=extra_read, limit=LAST_LINES_HOLD)

    def _read_access_log(self, spec: AmphoraSpec) -> None:
        """Bind the log socket before the HAProxy that sends to it starts (or stop reading).

        The controller renders the ``log`` line only with connection logging on, so the
        configuration naming this amphora's socket is what asks for a reader.
        """
        logs = self.setup.access_logs
        if logs is None:
            return
        sock = logs.socket_directory / f"{self.id}.sock"
        if str(sock) in spec.haproxy_config:
            group = self.setup.host.haproxy_run_as()
            logs.ensure(self.id, spec.loadbalancer_id, sock, None if group is None else group[1])
        else:
            logs.close(self.id)

    def _keepalived(self) -> KeepalivedInstance:
        if self.setup.keepalived is None:
            raise InvalidInput("this agent runs no keepalived (ACTIVE_STANDBY needs it)")
        return KeepalivedInstance(self.instance.directory, self.setup.keepalived, self.namespace)

    def _apply_vrrp(self, spec: AmphoraSpec) -> None:
        """Converge keepalived to ``spec``: configure it, or stop it for a SINGLE spec."""
        if spec.vrrp is None:
            if self.keepalived is not None:
                self.keepalived.stop()
                self.keepalived, self.vrrp_interface = None, None
            return
        if self.keepalived is None:
            self.keepalived = self._keepalived()
        interface = vip_leg(self.setup.plan(self.id, spec), spec).amphora_end
        socket = spec.haproxy_facts.runtime_socket
        state_file = self.keepalived.files.state_file
        self.keepalived.apply(vrrp_config(self.id, spec, spec.vrrp, interface, socket, state_file))
        self.vrrp_interface = interface

    def _plumb(
        self, spec: AmphoraSpec, previous: AmphoraPlumbing | None
    ) -> tuple[str, list[Announcement]]:
        """Legs and routing; returns the checked nftables rules and the new addresses'
        announcements, both for after HAProxy."""
        plan = self.setup.plan(self.id, spec)
        announcements = apply_plumbing(self.setup.host, plan, previous)
        apply_routing(self.setup.host, plan_routing(plan, spec.vip.address, spec.vip.network_id))
        if self.datapath is None:
            self.datapath = self._datapath()
        leg = next(leg for leg in plan.legs if leg.network_id == spec.vip.network_id)
        return self.datapath.check(spec, leg.amphora_end), announcements

    def _datapath(self) -> AmphoraDatapath:
        namespace = self.namespace
        udp_checker = self.setup.udp_checker
        checker = None if udp_checker is None else udp_checker(namespace)
        return AmphoraDatapath(self.setup.host, self.setup.nft_ops(namespace), namespace, checker)

    def _save(self, spec: AmphoraSpec) -> None:
        if self.applied is None or self.applied.loadbalancer_id != spec.loadbalancer_id:
            self.stats = self._collector(spec)
        self.applied = spec
        path = self.instance.directory / APPLIED_FILE
        write_private(path, json.dumps({"spec": spec.model_dump_json()}))

    def _collector(self, spec: AmphoraSpec) -> StatsCollector:
        """Statistics for ``spec``'s load balancer, resuming the ledger stored beside it."""
        store = self.instance.directory / LEDGER_FILE
        return StatsCollector(LoadBalancerId(spec.loadbalancer_id), store=store)
