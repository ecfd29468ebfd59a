"""The L7 policies of a single-call create, which Octavia does not hand its driver.

Octavia's fully populated create builds each listener before it adds the listener's L7
policies to its database, and the listeners it passes to ``loadbalancer_create`` have no
``l7policies`` (octavia 2024-2025, seen by tests/e2e/octavia/test_provider_graph.py). So
the driver's one lbaas create carries everything else, and once Octavia has committed,
``L7AfterCommit`` reads the load balancer back through the driver agent's get socket
(where the policies and rules are, with their ids) and creates them in lbaas: after lbaas
finished the load balancer (so it does not answer 409 "immutable"), before the watcher
reports, so Octavia's policies go ACTIVE with the rest. A policy lbaas already has (a
future Octavia that hands them over) is a 409 "already an entity", which is success; one
lbaas refuses is reported ERROR to Octavia, with its rules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from lbaas_octavia_provider import translate
from lbaas_octavia_provider.client import LbaasClient, LbaasError, Unreachable
from lbaas_octavia_provider.reporter import Sink
from lbaas_octavia_provider.status import PENDING

LOG = logging.getLogger(__name__)
# How long to wait for Octavia's commit and for lbaas's create to settle.
COMMIT_WAIT = 60.0
SETTLE_WAIT = 900.0
INTERVAL = 0.2


class L7AfterCommit:
    def __init__(
        self,
        client: LbaasClient,
        sink: Sink,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.sink = sink
        self._clock = clock
        self._sleep = sleep

    def run(self, lb_id: str) -> None:
        octavia = self._committed(lb_id)
        if octavia is None:
            LOG.warning("load balancer %s not found in Octavia: no L7 policies added", lb_id)
            return
        policies = [
            policy
            for listener in translate.children(octavia, "listeners")
            for policy in translate.children(listener, "l7policies")
        ]
        if not policies:
            return
        self._settled(lb_id)
        for policy in sorted(policies, key=lambda p: int(translate.fields(p).get("position") or 0)):
            self._create(translate.fields(octavia).get("project_id"), policy)

    def _committed(self, lb_id: str) -> Any | None:
        """Octavia's load balancer once its create is committed (None before, or never)."""
        deadline = self._clock() + COMMIT_WAIT
        while self._clock() < deadline:
            try:
                found = self.sink.get_loadbalancer(lb_id)
            except Exception:  # noqa: BLE001 - the driver agent busy: asked again
                LOG.warning("load balancer %s: the driver agent did not answer", lb_id)
                found = None
            if found:
                return found
            self._sleep(INTERVAL)
        return None

    def _settled(self, lb_id: str) -> None:
        deadline = self._clock() + SETTLE_WAIT
        while self._clock() < deadline:
            shown = self.client.read(f"/loadbalancers/{lb_id}") or {}
            status = str((shown.get("loadbalancer") or {}).get("provisioning_status", ""))
            if not status.startswith(PENDING):
                return
            self._sleep(INTERVAL)

    def _create(self, project: str | None, policy: Any) -> None:
        body = translate.policy_create_body(policy)
        try:
            self.client.write("POST", "/l7policies", project, body)
        except (LbaasError, Unreachable) as exc:
            LOG.error("lbaas did not take L7 policy %s: %s", body["l7policy"]["id"], exc)
            error = {"provisioning_status": "ERROR", "operating_status": "ERROR"}
            rules = [{"id": r["id"], **error} for r in body["l7policy"].get("rules", [])]
            policies = [{"id": body["l7policy"]["id"], **error}]
            self.sink.update_loadbalancer_status({"l7rules": rules, "l7policies": policies})
