"""``/v2/octavia/amphorae``: the operator's view of data-plane instances (admin only).

Amphorae are created and retired by providers while they converge load balancers; the
API only shows them and offers the three operator actions Octavia has. ``failover`` is
a rebuild of the amphora's load balancer, written like every other write (lock the load
balancer, 409 unless ACTIVE, mark PENDING_UPDATE, enqueue in the same transaction).
``config`` re-pushes the configuration, which in lbaas is simply another converge of the
load balancer; it changes no status. ``DELETE`` only forgets an amphora already in
ERROR (a healthy one is replaced by failover instead) and releases its ports.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from lbaas.api.deps import Call, get_call
from lbaas.api.listing import select_fields
from lbaas.api.read_routes import Listing, add_list_route
from lbaas.api.routing import JsonRoute
from lbaas.api.views.amphora import listener_stats_view, render_amphorae
from lbaas.api.writes import tree_write, utcnow
from lbaas.db.amphorae import amphora_repo
from lbaas.db.health import stats_repo
from lbaas.db.listing import derived_spec
from lbaas.db.session import Session
from lbaas.db.tables import AmphoraRow, LoadBalancerRow
from lbaas.errors import Conflict, NotFound
from lbaas.identity.policy import require_admin
from lbaas.model.enums import AmphoraStatus, ProvisioningStatus

router = APIRouter(route_class=JsonRoute, tags=["amphorae"])
PATH = "/octavia/amphorae"
DELETED = AmphoraStatus.DELETED.value
T = AmphoraRow
# Columns the reference does not show are neither filters nor sort keys.
SPEC = derived_spec(
    T,
    exclude={"last_heartbeat_at", "host", "cert_expiration", "failover_pending"},
    tag_capable=False,
)


def get_amphora(session: Session, amphora_id: str, *, lock: bool = False) -> AmphoraRow:
    row = session.get(AmphoraRow, amphora_id, with_for_update=lock)
    if row is None or row.status == DELETED:
        raise NotFound.of("Amphora", amphora_id)
    return row


def _live_loadbalancer(session: Session, amp: AmphoraRow) -> LoadBalancerRow | None:
    if amp.loadbalancer_id is None:
        return None
    lb = session.get(LoadBalancerRow, amp.loadbalancer_id)
    return None if lb is None or lb.provisioning_status == ProvisioningStatus.DELETED else lb


def _live_amphorae(_: Session, request: Request, *__: Any) -> list[Any]:
    conditions = [T.status != DELETED]
    project = request.query_params.get("project_id")
    if project is not None:
        conditions.append(amphora_repo.owned_by_project(project))
    return conditions


add_list_route(
    router,
    PATH,
    Listing(
        SPEC,
        render_amphorae,
        "amphorae",
        extra_allowed=frozenset({"project_id"}),
    ),
    _live_amphorae,
    guard=require_admin,
)


@router.get(PATH + "/{amphora_id}")
def show_amphora(
    amphora_id: str, fields: list[str] = Query(default=[]), call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    require_admin(ctx)
    with services.database.read() as session:
        [view] = render_amphorae(session, [get_amphora(session, amphora_id)])
    return {"amphora": select_fields(view, fields)}


@router.delete(PATH + "/{amphora_id}", status_code=204)
def delete_amphora(amphora_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    require_admin(ctx)
    with services.database.write() as session:
        amp = get_amphora(session, amphora_id, lock=True)
        if amp.status != AmphoraStatus.ERROR.value:
            raise Conflict(f"amphora {amp.id} is immutable and cannot be updated.")
        amphora_repo.set_status(session, amp.id, DELETED, utcnow())
    return Response(status_code=204)


@router.put(PATH + "/{amphora_id}/failover", status_code=202)
def failover_amphora(amphora_id: str, call: Call = Depends(get_call)) -> Response:
    """Rebuild the amphora's load balancer; 409 unless that load balancer is ACTIVE."""
    services, ctx = call
    require_admin(ctx)
    with tree_write(services) as w:
        amp = get_amphora(w.session, amphora_id, lock=True)
        served = _live_loadbalancer(w.session, amp)
        if served is None:
            raise Conflict(f"amphora {amp.id} is immutable and cannot be updated.")
        lb = w.lock_child(served.id)
        amp.failover_pending = True
        w.changed(lb, rebuild=True)
    return Response(status_code=202)


@router.put(PATH + "/{amphora_id}/config", status_code=202)
def push_amphora_config(amphora_id: str, call: Call = Depends(get_call)) -> Response:
    """Re-apply the load balancer's configuration (a converge; no status changes)."""
    services, ctx = call
    require_admin(ctx)
    with tree_write(services) as w:
        lb = _live_loadbalancer(w.session, get_amphora(w.session, amphora_id))
        if lb is not None:
            w.converge_again(lb.id)
    return Response(status_code=202)


@router.get(PATH + "/{amphora_id}/stats")
def amphora_stats(amphora_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    """The amphora's listener records, whatever its status (a DELETED amphora's too), as
    Octavia answers: no record, or no such amphora, is its 404 ``Amphora stats for``."""
    services, ctx = call
    require_admin(ctx)
    with services.database.read() as session:
        rows = stats_repo.amphora_counter_records(session, amphora_id)
    if not rows:
        raise NotFound(f"Amphora stats for {amphora_id} not found.")
    return {"amphora_stats": [listener_stats_view(r, lb) for r, lb in rows]}
