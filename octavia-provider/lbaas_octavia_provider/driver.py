"""The provider drivers Octavia loads: ``lbaas`` (lbaas's amphorae) and
``lbaas-distributed`` (its kernel L4 provider).

Each call of Octavia's API becomes one call of lbaas's API with the same ids, made before
Octavia commits: if lbaas refuses or stays unreachable (after retrying), Octavia's own
change is rolled back and the user sees why. Once lbaas took it, a ``Watcher`` thread
reports the outcome back through the driver agent's status socket.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from octavia_lib.api.drivers import exceptions as driver_exceptions
from octavia_lib.api.drivers import provider_base

from lbaas_octavia_provider import capabilities, translate
from lbaas_octavia_provider.client import LbaasClient, LbaasError, Unreachable
from lbaas_octavia_provider.l7_after_commit import MARK, L7AfterCommit
from lbaas_octavia_provider.reporter import LazySink, Reporter, Sink, driver_library
from lbaas_octavia_provider.settings import Settings, load
from lbaas_octavia_provider.status import Key, snapshot
from lbaas_octavia_provider.watcher import Watcher

LOG = logging.getLogger(__name__)


@contextmanager
def _octavia_errors() -> Iterator[None]:
    """lbaas's refusals in Octavia's terms: a 400 is an option lbaas's provider does not
    offer (with lbaas's reason), the rest a driver error."""
    try:
        yield
    except LbaasError as exc:
        if exc.status == 400:
            raise driver_exceptions.UnsupportedOptionError(
                user_fault_string=exc.fault, operator_fault_string=str(exc)
            ) from exc
        raise driver_exceptions.DriverError(
            user_fault_string=exc.fault, operator_fault_string=str(exc)
        ) from exc
    except Unreachable as exc:
        raise driver_exceptions.DriverError(
            user_fault_string="The lbaas provider is unreachable; try again later.",
            operator_fault_string=str(exc),
        ) from exc
    except capabilities.Refused as exc:
        raise driver_exceptions.UnsupportedOptionError(
            user_fault_string=str(exc), operator_fault_string=str(exc)
        ) from exc


class LbaasDriver(provider_base.ProviderDriver):  # type: ignore[misc]
    lbaas_provider = "amphora"

    def __init__(
        self,
        settings: Settings | None = None,
        client: LbaasClient | None = None,
        sink: Sink | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings or load()
        self.client = client or LbaasClient(self.settings)
        self.sink = sink or LazySink(lambda: driver_library(self.settings))
        self.watcher = Watcher(self.client, Reporter(self.sink))
        self.l7_after_commit = L7AfterCommit(self.client, self.sink)

    # -- helpers ---------------------------------------------------------------------

    def _parent_lb(self, path: str, wrapper: str) -> str:
        """The load balancer of a pool or listener, as lbaas has it."""
        found = self.client.read(path)
        if not found:
            raise LbaasError(404, f"lbaas has no {wrapper} at {path}")
        return str(found[wrapper]["loadbalancers"][0]["id"])

    def _lb_of(self, kind: str, obj: Any) -> str:
        got = translate.fields(obj)
        if got.get("loadbalancer_id"):
            return str(got["loadbalancer_id"])
        if kind in ("member", "healthmonitor", "pool"):
            return self._parent_lb(f"/pools/{got['pool_id']}", "pool")
        if kind == "l7rule":
            policy = self.client.read(f"/l7policies/{got['l7policy_id']}") or {}
            listener_id = (policy.get("l7policy") or {}).get("listener_id")
            return self._parent_lb(f"/listeners/{listener_id}", "listener")
        return self._parent_lb(f"/listeners/{got['listener_id']}", "listener")

    def _path(self, kind: str, obj: Any, object_id: str | None = None) -> str:
        got = translate.fields(obj)
        if kind == "member":
            base = f"/pools/{got['pool_id']}/members"
        elif kind == "l7rule":
            base = f"/l7policies/{got['l7policy_id']}/rules"
        else:
            base = {"healthmonitor": "/healthmonitors", "l7policy": "/l7policies"}.get(
                kind, f"/{kind}s"
            )
        return f"{base}/{object_id}" if object_id else base

    def _write(
        self, kind: str, obj: Any, method: str, body: Any, path: str, deleted: list[Key]
    ) -> None:
        with _octavia_errors():
            lb_id = self._lb_of(kind, obj)
            project = translate.fields(obj).get("project_id")
            self.client.write(method, path, project, body)
        self.watcher.watch(lb_id, deleted)

    def _create(self, kind: str, obj: Any) -> None:
        body = translate.create_body(kind, obj)
        self._write(kind, obj, "POST", body, self._path(kind, obj), [])

    def _update(self, kind: str, old: Any, new: Any) -> None:
        object_id = translate.object_id(kind, old)
        body = translate.update_body(kind, new)
        self._write(kind, old, "PUT", body, self._path(kind, old, object_id), [])

    def _delete(self, kind: str, obj: Any, collection: str) -> None:
        object_id = translate.object_id(kind, obj)
        path = self._path(kind, obj, object_id)
        self._write(kind, obj, "DELETE", None, path, [(collection, object_id)])

    # -- load balancers --------------------------------------------------------------

    def loadbalancer_create(self, loadbalancer: Any) -> None:
        """One lbaas create, a single-call one when Octavia's is (its listeners, pools,
        members and monitors nested, each with Octavia's id): lbaas takes the whole tree
        or none of it, as Octavia does. The L7 policies Octavia leaves out of the listeners
        it passes follow once it has committed (``l7_after_commit``); the tag ``MARK``
        says so in lbaas until they all have an outcome."""
        got = translate.fields(loadbalancer)
        listeners = translate.children(loadbalancer, "listeners")
        body = translate.create_body("loadbalancer", loadbalancer)
        body["loadbalancer"].update(
            {
                **translate.vip_fields(loadbalancer, self.settings.vip_fields),
                **capabilities.placement(got),
                **translate.graph(loadbalancer),
                "provider": self.lbaas_provider,
                # MARK: L7 policies may follow (l7_after_commit), until it is removed.
                "tags": [translate.TAG, MARK] if listeners else [translate.TAG],
            }
        )
        with _octavia_errors():
            self.client.write("POST", "/loadbalancers", got.get("project_id"), body)
        lb_id = str(got["loadbalancer_id"])
        before = (lambda: self.l7_after_commit.run(lb_id)) if listeners else None
        self.watcher.watch(lb_id, before=before)

    def loadbalancer_delete(self, loadbalancer: Any, cascade: bool = False) -> None:
        lb_id = translate.object_id("loadbalancer", loadbalancer)
        with _octavia_errors():
            children = list(snapshot(self.client, lb_id).statuses)
            query = "?cascade=true" if cascade else ""
            self.client.write("DELETE", f"/loadbalancers/{lb_id}{query}")
        self.watcher.watch(lb_id, children)

    def loadbalancer_update(self, old_loadbalancer: Any, new_loadbalancer: Any) -> None:
        self._update("loadbalancer", old_loadbalancer, new_loadbalancer)

    def loadbalancer_failover(self, loadbalancer_id: str) -> None:
        with _octavia_errors():
            self.client.write("PUT", f"/loadbalancers/{loadbalancer_id}/failover")
        self.watcher.watch(loadbalancer_id)

    # -- children --------------------------------------------------------------------

    def listener_create(self, listener: Any) -> None:
        self._create("listener", listener)

    def listener_update(self, old_listener: Any, new_listener: Any) -> None:
        self._update("listener", old_listener, new_listener)

    def listener_delete(self, listener: Any) -> None:
        self._delete("listener", listener, "listeners")

    def pool_create(self, pool: Any) -> None:
        self._create("pool", pool)

    def pool_update(self, old_pool: Any, new_pool: Any) -> None:
        self._update("pool", old_pool, new_pool)

    def pool_delete(self, pool: Any) -> None:
        self._delete("pool", pool, "pools")

    def member_create(self, member: Any) -> None:
        self._create("member", member)

    def member_update(self, old_member: Any, new_member: Any) -> None:
        self._update("member", old_member, new_member)

    def member_delete(self, member: Any) -> None:
        self._delete("member", member, "members")

    def member_batch_update(self, pool_id: str, members: list[Any]) -> None:
        with _octavia_errors():
            before = self.client.read(f"/pools/{pool_id}/members") or {"members": []}
            kept = {translate.object_id("member", m) for m in members}
            gone: list[Key] = [
                ("members", str(m["id"])) for m in before["members"] if str(m["id"]) not in kept
            ]
            lb_id = self._parent_lb(f"/pools/{pool_id}", "pool")
            self.client.write(
                "PUT", f"/pools/{pool_id}/members", None, translate.batch_body(members)
            )
        self.watcher.watch(lb_id, gone)

    def health_monitor_create(self, healthmonitor: Any) -> None:
        self._create("healthmonitor", healthmonitor)

    def health_monitor_update(self, old_healthmonitor: Any, new_healthmonitor: Any) -> None:
        self._update("healthmonitor", old_healthmonitor, new_healthmonitor)

    def health_monitor_delete(self, healthmonitor: Any) -> None:
        self._delete("healthmonitor", healthmonitor, "healthmonitors")

    def l7policy_create(self, l7policy: Any) -> None:
        self._create("l7policy", l7policy)

    def l7policy_update(self, old_l7policy: Any, new_l7policy: Any) -> None:
        self._update("l7policy", old_l7policy, new_l7policy)

    def l7policy_delete(self, l7policy: Any) -> None:
        self._delete("l7policy", l7policy, "l7policies")

    def l7rule_create(self, l7rule: Any) -> None:
        self._create("l7rule", l7rule)

    def l7rule_update(self, old_l7rule: Any, new_l7rule: Any) -> None:
        self._update("l7rule", old_l7rule, new_l7rule)

    def l7rule_delete(self, l7rule: Any) -> None:
        self._delete("l7rule", l7rule, "l7rules")

    # -- flavors and availability zones ----------------------------------------------

    def get_supported_flavor_metadata(self) -> dict[str, str]:
        return dict(capabilities.FLAVOR_METADATA)

    def validate_flavor(self, flavor_metadata: dict[str, Any]) -> None:
        self._validate(capabilities.check_flavor, flavor_metadata)

    def get_supported_availability_zone_metadata(self) -> dict[str, str]:
        return dict(capabilities.ZONE_METADATA)

    def validate_availability_zone(self, availability_zone_metadata: dict[str, Any]) -> None:
        self._validate(capabilities.check_zone, availability_zone_metadata)

    def _validate(
        self, check: Callable[[LbaasClient, str, dict[str, Any]], None], data: dict[str, Any]
    ) -> None:
        with _octavia_errors():
            check(self.client, self.lbaas_provider, data)


class AmphoraDriver(LbaasDriver):
    """``lbaas``: lbaas's HAProxy amphorae (SINGLE or sub-second ACTIVE_STANDBY)."""

    lbaas_provider = "amphora"


class DistributedDriver(LbaasDriver):
    """``lbaas-distributed``: lbaas's L4 load balancing in every node's kernel."""

    lbaas_provider = "distributed"
