"""The single-call ("fully populated") load balancer create, and VIP extras.

Nested listeners and pools are validated by the same builders the standalone POSTs use, so
every rule of the per-resource sections applies; this module only resolves pools by name.
A nested pool object with more than a ``name`` is a definition; a bare ``{"name": …}`` is
a reference to one. Definitions — top-level, a listener's ``default_pool`` or a policy's
``redirect_pool`` — are hoisted and created first, then listeners, their policies and
rules, all in the load balancer's own transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from lbaas.api.builders.healthmonitor import build_healthmonitor
from lbaas.api.builders.l7policy import build_l7policy
from lbaas.api.builders.listener import build_listener
from lbaas.api.builders.member import build_member
from lbaas.api.builders.pool import build_pool
from lbaas.api.errors import validation_message
from lbaas.api.quota import check_quota
from lbaas.api.schemas.listener import ListenerNested
from lbaas.api.schemas.loadbalancer import AdditionalVip
from lbaas.api.schemas.pool import PoolSingleCreate
from lbaas.api.services import ApiServices
from lbaas.api.views.l7policy import render_l7policies
from lbaas.api.views.l7rule import render_l7rules
from lbaas.api.views.listener import render_listeners
from lbaas.api.views.pool import render_pools_full
from lbaas.db import table_rows
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, L7RuleRow, ListenerRow, LoadBalancerRow, PoolRow
from lbaas.errors import InvalidInput, ValidationFailure
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import check_given_id
from lbaas.model.graph import Vip
from lbaas.network.allocation import VipRequest, allocate_vip

M = TypeVar("M", bound=BaseModel)


def allocate_additional_vips(
    session: Session, extras: list[AdditionalVip], primary: Vip, owner: str, now: datetime
) -> list[dict[str, str]]:
    seen: set[str] = {primary.subnet_id}
    out: list[dict[str, str]] = []
    for extra in extras:
        if extra.subnet_id in seen:
            raise ValidationFailure(
                "Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet."
            )
        seen.add(extra.subnet_id)
        vip = allocate_vip(
            session, VipRequest(subnet_id=extra.subnet_id, address=extra.ip_address), owner, now
        )
        if vip.network_id != primary.network_id:
            raise ValidationFailure("All VIP subnets must belong to the same network.")
        out.append({"subnet_id": vip.subnet_id, "ip_address": vip.address, "port_id": vip.port_id})
    return out


def _parse(model: type[M], raw: Any, where: str) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        errors = [{**e, "loc": ("loadbalancer", where, *e["loc"])} for e in exc.errors()]
        raise InvalidInput(validation_message(errors)) from None


def _pool_objects(
    listeners: list[ListenerNested], pools: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    yield from pools
    for listener in listeners:
        if listener.default_pool is not None:
            yield listener.default_pool
        for policy in listener.l7policies or []:
            if policy.redirect_pool is not None:
                yield policy.redirect_pool


def _pool_key(raw: dict[str, Any]) -> str:
    """How the body knows a pool: by the id it gives (an administrator's, see ``GivenId``),
    else by its name."""
    return f"id:{raw['id']}" if raw.get("id") else f"name:{raw['name']}"


def _pool_definitions(
    listeners: list[ListenerNested], pools: list[dict[str, Any]]
) -> dict[str, PoolSingleCreate]:
    """Every pool the body defines, by ``_pool_key``; a bare ``{"name": …}`` must name one."""
    definitions: dict[str, PoolSingleCreate] = {}
    names: set[str] = set()
    references: list[str] = []
    for raw in _pool_objects(listeners, pools):
        if not isinstance(raw, dict) or not (raw.get("name") or raw.get("id")):
            raise ValidationFailure(
                "Pools must be named when creating a fully populated loadbalancer."
            )
        if set(raw) == {"name"}:
            references.append(str(raw["name"]))
            continue
        name, key = raw.get("name"), _pool_key(raw)
        if name and name in names:
            raise ValidationFailure(
                "Pool names must be unique when creating a fully populated loadbalancer."
            )
        if key in definitions:
            raise ValidationFailure(
                "Pool ids must be unique when creating a fully populated loadbalancer."
            )
        names.update([str(name)] if name else [])
        definitions[key] = _parse(PoolSingleCreate, raw, "pools")
    for name in references:
        if name not in names:
            raise ValidationFailure(
                f"Pool '{name}' was referenced but no full definition was found."
            )
    return definitions


def _resolve(pool_rows: dict[str, PoolRow], raw: dict[str, Any] | None) -> PoolRow | None:
    """The pool a listener's ``default_pool`` or a policy's ``redirect_pool`` stands for: a
    definition is known by its key, a bare ``{"name": …}`` by the name of one."""
    if raw is None:
        return None
    if set(raw) != {"name"}:
        return pool_rows[_pool_key(raw)]
    return next(p for p in pool_rows.values() if p.name == raw["name"])


def _check_quotas(
    session: Session,
    services: ApiServices,
    project: str,
    listeners: list[ListenerNested],
    pools: dict[str, PoolSingleCreate],
) -> None:
    policies = [p for li in listeners for p in li.l7policies or []]
    counts = {
        "listener": len(listeners),
        "pool": len(pools),
        "member": sum(len(p.members or []) for p in pools.values()),
        "healthmonitor": sum(1 for p in pools.values() if p.healthmonitor is not None),
        "l7policy": len(policies),
        "l7rule": sum(len(p.rules or []) for p in policies),
    }
    for kind, count in counts.items():
        check_quota(session, services.settings.quota, project, kind, count)


def create_children(
    session: Session,
    services: ApiServices,
    ctx: RequestContext,
    lb: LoadBalancerRow,
    listeners_raw: list[dict[str, Any]],
    pools_raw: list[dict[str, Any]],
    now: datetime,
) -> dict[str, Any]:
    """Create the nested tree under ``lb``; return the expanded ``listeners`` and ``pools``.

    A listener's ``default_pool_id`` or a policy's ``redirect_pool_id`` may name a pool of
    the body by its given id: pools are created (and flushed) first, so the usual lookup
    finds it."""
    listeners = [_parse(ListenerNested, raw, "listeners") for raw in listeners_raw]
    definitions = _pool_definitions(listeners, pools_raw)
    for given in [*listeners, *definitions.values()]:
        check_given_id(ctx, given)
    _check_quotas(session, services, lb.project_id, listeners, definitions)
    pool_rows: dict[str, PoolRow] = {}
    for key, definition in definitions.items():
        pool = build_pool(session, services, lb, definition, now)
        pool_rows[key] = pool
        monitor = definition.healthmonitor
        if monitor is not None:
            build_healthmonitor(session, services, pool, monitor, now)
        for member in definition.members or []:
            build_member(session, services, pool, member, now, has_monitor=monitor is not None)
    listener_rows: list[ListenerRow] = []
    for data in listeners:
        default = _resolve(pool_rows, data.default_pool)
        listener = build_listener(session, services, lb, data, now, default_pool=default)
        listener_rows.append(listener)
        for policy in data.l7policies or []:
            target = _resolve(pool_rows, policy.redirect_pool)
            build_l7policy(session, services, listener, lb, policy, now, redirect_pool=target)
    session.flush()
    return {
        "listeners": _full_listeners(session, listener_rows),
        "pools": render_pools_full(session, list(pool_rows.values())),
    }


def _full_listeners(session: Session, rows: list[ListenerRow]) -> list[dict[str, Any]]:
    """Listener views with full L7 policies, each with full rules (the graph-create shape)."""
    out = []
    for row, view in zip(rows, render_listeners(session, rows), strict=True):
        found = table_rows.find_rows(session, L7PolicyRow, L7PolicyRow.listener_id == row.id)
        policies: list[L7PolicyRow] = sorted(found, key=lambda p: p.position)
        policy_views = render_l7policies(session, policies)
        for policy, policy_view in zip(policies, policy_views, strict=True):
            rules = table_rows.find_rows(session, L7RuleRow, L7RuleRow.l7policy_id == policy.id)
            policy_view["rules"] = render_l7rules(
                session, sorted(rules, key=lambda r: r.created_at)
            )
        out.append({**view, "l7policies": policy_views})
    return out
