"""The noop provider: accepts every graph and touches no data plane.

It exists for API tests, benchmarks and the control plane's crash tests. It remembers what
it was asked to do (in memory, and optionally as JSON lines in a file so a test can read
what another process did), and it can be made slow or failing through its settings or,
in-process, through its attributes.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lbaas.errors import PermanentError, TemporaryError
from lbaas.model import enums as E
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.private_files import FILE_MODE

if TYPE_CHECKING:
    from lbaas.db.jobs.job_queue import Claim
from lbaas.providers.base import (
    ApplyResult,
    ProviderCapabilities,
    ProviderContext,
    ProviderDriver,
    every_listener_option,
)


@dataclass(frozen=True)
class RecordedCall:
    action: str
    loadbalancer_id: str
    started: float
    finished: float


#: Seconds a closed ``gate`` holds a converge at most (a test that forgot to reopen it).
GATE_LIMIT = 60.0


#: The zone keys of Octavia's noop driver (compute_zone, volume_zone) and the others its
#: amphora driver validates (what octavia-tempest-plugin's zone profiles set, as Octavia's
#: API job runs them on that driver): recorded only, but ``valid_vip_networks``, which the
#: API enforces for every provider. Octavia's noop driver validates no key; this one still
#: refuses a key outside this list with a 400.
NOOP_ZONE_KEYS = {
    "compute_zone": "Recorded only",
    "volume_zone": "Recorded only",
    "management_network": "Recorded only",
    "valid_vip_networks": "The network IDs VIPs of this zone may use (a list)",
}


class NoopProvider(ProviderDriver):
    description = "Accepts everything and carries no traffic (for tests and benchmarks)."

    def __init__(self, context: ProviderContext) -> None:
        super().__init__(context)
        settings = context.settings.providers
        self.delay = settings.noop_delay
        # Open unless a test closes it: a closed gate holds every converge (at most
        # ``GATE_LIMIT``) until reopened, so a test sees PENDING_* for as long as it needs.
        self.gate = threading.Event()
        self.gate.set()
        self.fail = settings.noop_fail
        self._record_path = settings.noop_record_path
        self.calls: list[RecordedCall] = []
        self.graphs: dict[str, LoadBalancer] = {}
        self._lock = threading.Lock()

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities(
            listener_protocols=frozenset(E.ListenerProtocol),
            pool_protocols=frozenset(E.PoolProtocol),
            lb_algorithms=frozenset(E.LbAlgorithm),
            persistence_types=frozenset(E.PersistenceType),
            health_monitor_types=frozenset(E.HealthMonitorType),
            l7_actions=frozenset(E.L7PolicyAction),
            l7_rule_types=frozenset(E.L7RuleType),
            # Nothing to enforce on, so nothing left unenforced: it records the graph.
            allowed_cidrs_protocols=frozenset(E.ListenerProtocol),
            listener_options=every_listener_option(frozenset(E.ListenerProtocol)),
            pool_tls_protocols=frozenset(E.PoolProtocol),
            additional_vips=True,
            flavor_keys={"loadbalancer_topology": "SINGLE or ACTIVE_STANDBY (recorded only)"},
            availability_zone_keys=NOOP_ZONE_KEYS,
        )

    def _append_record(self, line: dict[str, object]) -> None:
        if not self._record_path:
            return
        data = (json.dumps({**line, "pid": os.getpid()}) + "\n").encode()
        fd = os.open(self._record_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _run(self, action: str, loadbalancer_id: str) -> None:
        started = time.time()
        self._append_record(
            {"phase": "start", "action": action, "loadbalancer_id": loadbalancer_id, "at": started}
        )
        if self.delay:
            time.sleep(self.delay)
        self.gate.wait(GATE_LIMIT)
        if self.fail == "temporary":
            raise TemporaryError("noop provider told to fail (temporary)", delay=0.05)
        if self.fail == "permanent":
            raise PermanentError("noop provider told to fail (permanent)")
        if self.fail == "unexpected":
            raise RuntimeError("noop provider told to fail (unexpected)")
        call = RecordedCall(action, loadbalancer_id, started, time.time())
        with self._lock:
            self.calls.append(call)
        self._append_record({"phase": "end", **call.__dict__})

    def apply(self, graph: LoadBalancer, fence: Claim, *, rebuild: bool = False) -> ApplyResult:
        """Record the call; the noop provider writes nothing, so ``fence`` is not checked."""
        self._run("rebuild" if rebuild else "apply", graph.id)
        with self._lock:
            self.graphs[graph.id] = graph
        return ApplyResult(serving=True, detail="noop")

    def delete(self, loadbalancer_id: LoadBalancerId, fence: Claim) -> None:
        """Record the call; nothing is written, so ``fence`` is not checked."""
        self._run("delete", loadbalancer_id)
        with self._lock:
            self.graphs.pop(loadbalancer_id, None)

    def status(self, loadbalancer_id: LoadBalancerId) -> HealthReport | None:
        return None
