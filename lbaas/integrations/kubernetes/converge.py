"""Make Octavia hold what a Service wants, through the public v2 API only.

Octavia locks a load balancer while it applies a change (PENDING_*) and answers 409 to
any write meanwhile, so every write here is followed by a wait for ACTIVE. A load
balancer is found by its Service's UID tag, never by a remembered id, so a controller
that died half-way (or whose annotation write was lost) finds what it made instead of
making a second one; load balancers tagged with this cluster whose Service no longer
exists are orphans and removed (``sweep_orphans``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lbaas.errors import PermanentError, TemporaryError
from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.base import Json, OctaviaApi, OctaviaNotFound
from lbaas.integrations.kubernetes.converge_listeners import converge_listeners
from lbaas.integrations.kubernetes.desired import DesiredLoadBalancer
from lbaas.integrations.kubernetes.octavia_bodies import immutable_mismatch, load_balancer_body
from lbaas.model.enums import ProvisioningStatus

LOG = logging.getLogger(__name__)
LOAD_BALANCERS = "/lbaas/loadbalancers"


@dataclass
class ConvergedState:
    """What holds a Service's load balancer, recorded in its state annotation."""

    load_balancer_id: str
    vip_address: str
    provisioning_status: str
    listeners: dict[str, Json] = field(default_factory=dict)

    def record(self) -> Json:
        return {
            "load_balancer_id": self.load_balancer_id,
            "vip_address": self.vip_address,
            "provisioning_status": self.provisioning_status,
            "listeners": self.listeners,
        }


class Converger:
    """Converges one Service's load balancer at a time (callers serialise per Service)."""

    def __init__(
        self,
        api: OctaviaApi,
        wait_timeout: float = 60.0,
        member_subnet_id: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self._wait_timeout = wait_timeout
        self._member_subnet = member_subnet_id
        self._sleep = sleep
        self._clock = clock

    def find(self, tag: str) -> list[Json]:
        """Live load balancers carrying ``tag``, oldest first."""
        found = self.api.get(LOAD_BALANCERS, {"tags": tag})["loadbalancers"]
        live = [lb for lb in found if lb["provisioning_status"] != ProvisioningStatus.DELETED]
        return sorted(live, key=lambda lb: (str(lb.get("created_at") or ""), lb["id"]))

    def wait_active(self, lb_id: str) -> Json:
        """Poll until the load balancer is no longer PENDING_*; TemporaryError past the
        timeout, PermanentError for ERROR."""
        deadline = self._clock() + self._wait_timeout
        pause = 0.02
        while True:
            lb = self.api.get(f"{LOAD_BALANCERS}/{lb_id}")["loadbalancer"]
            status = lb["provisioning_status"]
            if status == ProvisioningStatus.ACTIVE:
                return dict(lb)
            if status == ProvisioningStatus.ERROR:
                raise PermanentError(f"load balancer {lb_id} is in ERROR")
            if self._clock() > deadline:
                raise TemporaryError(f"load balancer {lb_id} still {status}", delay=1.0)
            self._sleep(pause)
            pause = min(pause * 2, 0.5)

    def ensure(self, desired: DesiredLoadBalancer) -> ConvergedState:
        """Create or correct the Service's load balancer; its state when done."""
        found = self.find(names.uid_tag(desired.uid))
        for duplicate in found[1:]:
            LOG.warning("removing duplicate load balancer %s", duplicate["id"])
            self.delete(duplicate)
        current = found[0] if found else None
        if current is not None and current["provisioning_status"] == ProvisioningStatus.ERROR:
            LOG.warning("load balancer %s is in ERROR; rebuilding it", current["id"])
            self.delete(current)
            current = None
        if current is not None and (wrong := immutable_mismatch(desired, current)):
            LOG.info("load balancer %s: %s changed; rebuilding", current["id"], wrong)
            self.delete(current)
            current = None
        if current is None:
            body = load_balancer_body(desired, self._member_subnet)
            created = self.api.post(LOAD_BALANCERS, {"loadbalancer": body})["loadbalancer"]
            lb = self.wait_active(created["id"])
        elif current["provisioning_status"] == ProvisioningStatus.ACTIVE:
            lb = current  # the listing already says so: no second read
        else:
            lb = self.wait_active(current["id"])
        listeners = converge_listeners(self, lb["id"], desired, self._member_subnet)
        return ConvergedState(
            load_balancer_id=lb["id"],
            vip_address=str(lb["vip_address"]),
            provisioning_status=str(ProvisioningStatus.ACTIVE),
            listeners=listeners,
        )

    def delete(self, lb: Json) -> None:
        """Delete a load balancer with everything under it and wait until it is gone."""
        status = lb["provisioning_status"]
        if status != ProvisioningStatus.PENDING_DELETE:
            if ProvisioningStatus(status).is_pending:
                raise TemporaryError(f"load balancer {lb['id']} is {status}", delay=0.5)
            try:
                self.api.delete(f"{LOAD_BALANCERS}/{lb['id']}", {"cascade": "true"})
            except OctaviaNotFound:
                return
        self._wait_gone(lb["id"])

    def _wait_gone(self, lb_id: str) -> None:
        deadline = self._clock() + self._wait_timeout
        while True:
            try:
                lb = self.api.get(f"{LOAD_BALANCERS}/{lb_id}")["loadbalancer"]
            except OctaviaNotFound:
                return
            if lb["provisioning_status"] == ProvisioningStatus.DELETED:
                return
            if self._clock() > deadline:
                raise TemporaryError(f"load balancer {lb_id} is still being deleted")
            self._sleep(0.05)

    def release(self, uid: str) -> int:
        """Delete every load balancer of the Service with this UID; how many there were."""
        found = self.find(names.uid_tag(uid))
        for lb in found:
            self.delete(lb)
        return len(found)

    def sweep_orphans(self, cluster: str, keep: Callable[[Json], bool]) -> list[str]:
        """Delete this cluster's load balancers that ``keep`` does not claim (asked after
        the listing, so it judges with what it knows by then)."""
        removed = []
        for lb in self.find(names.cluster_tag(cluster)):
            if keep(lb):
                continue
            LOG.warning("removing orphan load balancer %s (%s)", lb["id"], lb.get("name"))
            self.delete(lb)
            removed.append(str(lb["id"]))
        return removed
