"""The amphorae of this host: found again after a restart, looked up, read in parallel.

One directory per amphora under ``root`` holds its files and ``applied.json`` (the last spec
applied successfully), which is how an agent that restarts finds its amphorae again and how
an older version is refused; a repeated PUT is recognised by ``HaproxyInstance``, which asks
the running HAProxy what it loaded. A stored spec of a format this agent cannot read is
logged and its amphora left out. The registry hands each call to that amphora's
``AmphoraConverger`` under the amphora's own lock, and checks, once it holds the lock, that
the amphora was not deleted meanwhile; the supervise loop does the same.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

from lbaas.amphora.access_log import AccessLogs
from lbaas.amphora.converger import (
    APPLIED_FILE,
    AgentMode,
    AmphoraConverger,
    AmphoraSetup,
    NftOpsFactory,
    UdpCheckerFactory,
)
from lbaas.amphora.haproxy_process import RuntimeApiFactory
from lbaas.amphora.plumbing import DEFAULT_NAMESPACE_PREFIX
from lbaas.amphora.socket_room import LONGEST_NAME, socket_path_problem
from lbaas.amphora.spares import SparePool
from lbaas.amphora.vip_probe import ProbeSubject
from lbaas.errors import InvalidInput
from lbaas.host.base import HostOps, KeepalivedOps
from lbaas.host.runtime_api import RuntimeApi
from lbaas.l4.host.real import RealNftOps
from lbaas.model.health import HealthReport
from lbaas.private_files import make_private_directory
from lbaas.wire.amphora import AMPHORA_ID_PATTERN, AmphoraSpec, AmphoraStatus

log = logging.getLogger(__name__)

#: Seconds a heartbeat waits for an amphora's statistics (shorter than any sane interval).
STATS_DEADLINE = 0.8

__all__ = ["STATS_DEADLINE", "AgentMode", "AmphoraRegistry", "NftOpsFactory", "UdpCheckerFactory"]


def _stats_result(amphora_id: str, future: Future[HealthReport | None]) -> HealthReport | None:
    """A finished read's report; a read that failed costs only its own amphora's report."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - one amphora's failure must not stop the others
        log.warning("cannot read the statistics of amphora %s: %s", amphora_id, exc)
        return None


class AmphoraRegistry:
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
        spares: SparePool | None = None,
    ) -> None:
        """``spares``: ready slots a new amphora is made from (netns mode; see ``spares``)."""
        self.root = root.absolute()
        self.spares = spares
        self.setup = AmphoraSetup(
            root=self.root,
            host=host,
            mode=mode,
            runtime_api=runtime_api,
            namespace_prefix=namespace_prefix,
            bridge_mappings=dict(bridge_mappings or {}),
            nft_ops=nft_ops,
            keepalived=keepalived,
            udp_checker=udp_checker,
            access_logs=access_logs,
        )
        self.access_logs = access_logs
        self.mode = mode
        self._lock = threading.Lock()
        self._stats_pool = ThreadPoolExecutor(
            max_workers=stats_threads, thread_name_prefix="amphora-stats"
        )
        self._stats_reads: dict[str, Future[HealthReport | None]] = {}
        # The reads a round sent out in time (the next round must not send them again).
        self._stats_delivered: set[Future[HealthReport | None]] = set()
        self._stats_lock = threading.Lock()
        self._amphorae: dict[str, AmphoraConverger] = {}

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
            self._entry(amphora_id).adopt(spec, hold_dead=hold_dead)
            found.append(amphora_id)
        return found

    def amphora_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._amphorae)

    def _amphora_list(self) -> list[AmphoraConverger]:
        with self._lock:
            return list(self._amphorae.values())

    def probe_subjects(self) -> list[ProbeSubject]:
        """What ``VipProber`` connects to: each applied amphora's VIP and TCP listener ports."""
        subjects = (amp.probe_subject() for amp in self._amphora_list())
        return [subject for subject in subjects if subject is not None]

    def vrrp_states(self) -> dict[str, str]:
        """Each ACTIVE_STANDBY amphora's VRRP state as its keepalived last reported it."""
        states = {}
        for amp in self._amphora_list():
            state = None if amp.keepalived is None else amp.keepalived.state()
            if state is not None:
                states[amp.id] = state
        return states

    def put(self, amphora_id: str, spec: AmphoraSpec) -> AmphoraStatus:
        """Converge amphora ``amphora_id`` to ``spec``."""
        self.setup.refuse_unsupported(spec)
        with self._locked(amphora_id) as amp:
            took = amp.applied is None and self._take_spare(amp)
            try:
                return amp.converge(spec)
            finally:
                if took and self.spares is not None:
                    self.spares.refill_soon()

    def _take_spare(self, amp: AmphoraConverger) -> bool:
        """Make a new amphora from a spare slot, if one is ready and nothing of it exists
        yet (a first PUT that failed part-way left its own directory or namespace)."""
        if self.spares is None or os.path.lexists(amp.instance.directory):
            return False
        if self.setup.host.namespace_exists(amp.namespace):
            return False
        return self.spares.claim_for(amp.id) is not None

    def get(self, amphora_id: str) -> AmphoraStatus | None:
        with self._lock:
            amp = self._amphorae.get(amphora_id)
        return None if amp is None else amp.status()

    def converger(self, amphora_id: str) -> AmphoraConverger | None:
        """The amphora's converger, unlocked (for reads that must not wait on a change)."""
        with self._lock:
            return self._amphorae.get(amphora_id)

    def delete(self, amphora_id: str) -> None:
        """Stop HAProxy, remove plumbing and files. Idempotent."""
        with self._locked(amphora_id) as amp:
            amp.remove()
            with self._lock:
                self._amphorae.pop(amphora_id, None)

    def supervise(self) -> list[str]:
        """Restart every HAProxy whose master died; the ids of those restarted."""
        restarted = []
        for amphora_id in self.amphora_ids():
            with self._lock:
                amp = self._amphorae.get(amphora_id)
            if amp is None:
                continue
            with amp.lock:
                with self._lock:
                    if self._amphorae.get(amphora_id) is not amp:
                        continue  # deleted meanwhile: nothing to bring back
                # Top of the supervise loop: one broken amphora must not stop the others.
                try:
                    if amp.supervise():
                        restarted.append(amphora_id)
                        log.warning("restarted haproxy of amphora %s", amphora_id)
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
        futures, finished_late = self._send_reads()
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

    def _send_reads(
        self,
    ) -> tuple[dict[Future[HealthReport | None], str], dict[str, Future[HealthReport | None]]]:
        """This round's reads (future -> amphora), and the last round's that ended late."""
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
        return futures, finished_late

    def _read_stats(self, amphora_id: str) -> HealthReport | None:
        with self._lock:
            amp = self._amphorae.get(amphora_id)
        return None if amp is None else amp.read_stats()

    def stop_all(self) -> None:
        """Stop every HAProxy but keep files and plumbing (agent shutdown in tests)."""
        for amp in self._amphora_list():
            with amp.lock:
                amp.stop()
        if self.access_logs is not None:
            self.access_logs.close_all()

    @contextmanager
    def _locked(self, amphora_id: str) -> Iterator[AmphoraConverger]:
        """The amphora's converger, locked, and still the registered one (not just deleted)."""
        while True:
            amp = self._entry(amphora_id)
            with amp.lock:
                with self._lock:
                    current = self._amphorae.get(amphora_id) is amp
                if current:
                    yield amp
                    return

    def _entry(self, amphora_id: str) -> AmphoraConverger:
        if re.fullmatch(AMPHORA_ID_PATTERN, amphora_id) is None:
            raise InvalidInput(f"invalid amphora id {amphora_id!r}")
        problem = socket_path_problem(str(self.root / amphora_id / LONGEST_NAME))
        if problem is not None:
            raise InvalidInput(f"amphora {amphora_id!r} cannot run here: {problem}")
        with self._lock:
            amp = self._amphorae.get(amphora_id)
            if amp is None:
                amp = self._amphorae[amphora_id] = AmphoraConverger.create(amphora_id, self.setup)
            return amp
