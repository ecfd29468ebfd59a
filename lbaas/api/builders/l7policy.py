"""L7 policy rows from requests: create (standalone and graph), update, and positions.

A listener's policies stay numbered 1..N without gaps: a create inserts at its position
(or appends), a PUT of ``position`` moves the policy, and a delete closes the gap
(``renumber_without``). Siblings whose number changes are not marked pending: the change
is applied by the same converge job as the request that caused it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from lbaas.api.builders.common import add_new_row, new_object_columns
from lbaas.api.builders.l7rule import build_l7rule
from lbaas.api.builders.listener import pool_on_loadbalancer
from lbaas.api.capabilities import require_capability
from lbaas.api.schemas.l7policy import L7PolicyCommon, L7PolicyUpdate
from lbaas.api.services import ApiServices
from lbaas.api.validation import listener as listener_rules
from lbaas.api.validation.l7 import Redirect, reorder, sanitize_policy_args, settle_redirect
from lbaas.db.listing import set_tags
from lbaas.db.loadbalancers.l7_repo import policies_in_order
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, ListenerRow, LoadBalancerRow, PoolRow
from lbaas.model.enums import L7PolicyAction, ListenerProtocol

REDIRECT_ARGS = (
    "action",
    "redirect_pool_id",
    "redirect_url",
    "redirect_prefix",
    "redirect_http_code",
)


def _number(policies: Sequence[L7PolicyRow], order: Sequence[str]) -> None:
    by_id = {p.id: p for p in policies}
    for index, policy_id in enumerate(order, start=1):
        if by_id[policy_id].position != index:
            by_id[policy_id].position = index


def renumber_without(session: Session, listener_id: str, leaving: str) -> None:
    """Close the gap a policy leaves (delete): the others keep their order, 1..N."""
    others = [p for p in policies_in_order(session, listener_id) if p.id != leaving]
    _number(others, [p.id for p in others])


def _check_action(services: ApiServices, lb: LoadBalancerRow, action: L7PolicyAction) -> None:
    require_capability(services, lb.provider, "L7 policy action", action, "l7_actions")


def _check_target(
    session: Session, lb: LoadBalancerRow, listener: ListenerRow, pool: PoolRow | None, pool_id: str
) -> None:
    target = pool if pool is not None else pool_on_loadbalancer(session, lb, pool_id)
    listener_rules.check_pool_protocol(ListenerProtocol(listener.protocol), target.protocol)


def _check_listener(services: ApiServices, lb: LoadBalancerRow, listener: ListenerRow) -> None:
    if listener.protocol == ListenerProtocol.PROMETHEUS.value:
        listener_rules.raise_no_children()
    protocol = ListenerProtocol(listener.protocol)
    require_capability(
        services, lb.provider, "L7 policies on listener protocol", protocol, "l7_listener_protocols"
    )


def build_l7policy(
    session: Session,
    services: ApiServices,
    listener: ListenerRow,
    lb: LoadBalancerRow,
    data: L7PolicyCommon,
    now: datetime,
    *,
    redirect_pool: PoolRow | None = None,
) -> L7PolicyRow:
    """Validate a new policy of ``listener`` (its ``lb`` already locked) and add it.

    ``redirect_pool`` is a pool the caller already holds (the graph create's resolved
    ``redirect_pool``); otherwise ``data.redirect_pool_id`` is looked up on ``lb``. Inline
    ``data.rules`` are built too (PENDING_CREATE); quotas are the caller's.
    """
    _check_listener(services, lb, listener)
    args: dict[str, object] = {key: getattr(data, key) for key in REDIRECT_ARGS}
    if redirect_pool is not None:
        args["redirect_pool"] = redirect_pool.id
    clean = sanitize_policy_args(args)
    action = L7PolicyAction(str(clean["action"]))
    _check_action(services, lb, action)
    pool_id = redirect_pool.id if redirect_pool is not None else clean.get("redirect_pool_id")
    redirect = settle_redirect(
        Redirect(
            action,
            pool_id=_text(pool_id),
            url=_text(clean.get("redirect_url")),
            prefix=_text(clean.get("redirect_prefix")),
            http_code=_code(clean.get("redirect_http_code")),
        )
    )
    if redirect.pool_id is not None:
        _check_target(session, lb, listener, redirect_pool, redirect.pool_id)
    siblings = policies_in_order(session, listener.id)
    row = L7PolicyRow(
        **new_object_columns(lb.project_id, now, data=data),
        listener_id=listener.id,
        name=data.name,
        description=data.description,
        admin_state_up=bool(data.admin_state_up),
        position=len(siblings) + 1,
    )
    _write_redirect(row, redirect)
    _number([*siblings, row], reorder([p.id for p in siblings], row.id, data.position))
    add_new_row(session, row, data.tags)
    for rule in data.rules or []:
        build_l7rule(session, services, lb, row, rule, now)
    return row


def update_l7policy(
    session: Session,
    services: ApiServices,
    lb: LoadBalancerRow,
    listener: ListenerRow,
    row: L7PolicyRow,
    data: L7PolicyUpdate,
    now: datetime,
) -> None:
    """Validate the stored policy merged with a PUT and write it (statuses are the caller's).

    The action rules run on the keys the request sent; an empty request is a 400.
    """
    clean = sanitize_policy_args({key: getattr(data, key) for key in data.model_fields_set})
    stored = {
        "action": row.action,
        "redirect_pool_id": row.redirect_pool_id,
        "redirect_url": row.redirect_url,
        "redirect_prefix": row.redirect_prefix,
        "redirect_http_code": row.redirect_http_code,
    }
    merged = {key: clean.get(key, stored[key]) for key in REDIRECT_ARGS}
    action = L7PolicyAction(str(merged["action"]))
    if "action" in clean:
        _check_action(services, lb, action)
    redirect = settle_redirect(
        Redirect(
            action,
            pool_id=_text(merged["redirect_pool_id"]),
            url=_text(merged["redirect_url"]),
            prefix=_text(merged["redirect_prefix"]),
            http_code=_code(merged["redirect_http_code"]),
        )
    )
    if redirect.pool_id is not None and clean.get("redirect_pool_id"):
        _check_target(session, lb, listener, None, redirect.pool_id)
    _write_redirect(row, redirect)
    if data.given("name"):
        row.name = data.name
    if data.given("description"):
        row.description = data.description
    if data.given("admin_state_up"):
        row.admin_state_up = bool(data.admin_state_up)
    if data.given("position"):
        policies = policies_in_order(session, listener.id)
        _number(policies, reorder([p.id for p in policies], row.id, data.position))
    if data.tags is not None:
        set_tags(session, row.id, data.tags)
    row.updated_at = now


def _write_redirect(row: L7PolicyRow, redirect: Redirect) -> None:
    row.action = redirect.action.value
    row.redirect_pool_id = redirect.pool_id
    row.redirect_url = redirect.url
    row.redirect_prefix = redirect.prefix
    row.redirect_http_code = redirect.http_code


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _code(value: object) -> int | None:
    return None if value is None else int(str(value))
