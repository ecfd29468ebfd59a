"""Security groups and their rules, in the Networking (Neutron) API's shape.

``/v2.0/security-groups`` (list, show, create, update, delete; a group embeds its rules
as ``security_group_rules``) and ``/v2.0/security-group-rules`` (list, show, create,
delete), enough for the stock ``openstack security group …`` commands. A load balancer
names groups in ``vip_sg_ids`` and its VIP admits what their ingress rules allow
(``lbaas.model.security_rules``). Scoped like the other networking resources: a member
writes its own project's groups (an admin any project's, and may name the project),
readers see their project's; another project's group is a 403 after the 404 check.
Errors are Neutron's body (``lbaas.api.neutron_errors``) with Neutron's wording and, where
Neutron has one, its name of the condition as ``type`` (``SecurityGroupRuleExists``).

A rule created or deleted changes what the VIPs using its group admit: each such load
balancer is converged again in the same transaction (``converge_again``: no status
changes, the data planes get the new source networks within a converge).
"""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from lbaas.api.deps import Call, get_call
from lbaas.api.routers.networking import matches, owner_project
from lbaas.api.routing import JsonRoute
from lbaas.api.schemas.security_group import GroupCreateBody, GroupUpdateBody, RuleCreateBody
from lbaas.api.writes import TreeWrite, tree_write, utcnow
from lbaas.db.network import security_group_repo as repo
from lbaas.db.session import Session
from lbaas.db.tables import SecurityGroupRow, SecurityGroupRuleRow
from lbaas.errors import Conflict, NotFound
from lbaas.identity.context import RequestContext
from lbaas.identity.policy import Rule, allowed, authorize, require_reader
from lbaas.network import security_groups as groups

router = APIRouter(route_class=JsonRoute, tags=["networking"])


def _time(value: Any) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value is not None else None


def rule_view(row: SecurityGroupRuleRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "security_group_id": row.security_group_id,
        "direction": row.direction,
        "ethertype": row.ethertype,
        "protocol": row.protocol,
        "port_range_min": row.port_range_min,
        "port_range_max": row.port_range_max,
        "remote_ip_prefix": row.remote_ip_prefix,
        "normalized_cidr": row.remote_ip_prefix,
        "remote_group_id": row.remote_group_id,
        "remote_address_group_id": None,
        "description": row.description,
        "project_id": row.project_id,
        "tenant_id": row.project_id,
        "belongs_to_default_sg": False,
        "created_at": _time(row.created_at),
        "updated_at": _time(row.created_at),
        "revision_number": 0,
        "tags": [],
    }


def group_view(row: SecurityGroupRow, rules: list[SecurityGroupRuleRow]) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "stateful": row.stateful,
        "shared": False,
        "project_id": row.project_id,
        "tenant_id": row.project_id,
        "security_group_rules": [rule_view(r) for r in rules],
        "created_at": _time(row.created_at),
        "updated_at": _time(row.updated_at or row.created_at),
        "revision_number": 0,
        "tags": [],
    }


def _shown(session: Session, row: SecurityGroupRow) -> dict[str, Any]:
    return group_view(row, repo.rules_of(session, [row.id]))


R = TypeVar("R", SecurityGroupRow, SecurityGroupRuleRow)


def _not_found_type(what: str) -> str:
    """Neutron's name of the error: "Security group rule" -> ``SecurityGroupRuleNotFound``."""
    return what.title().replace(" ", "") + "NotFound"


def _owned(ctx: RequestContext, row: R | None, what: str, ident: str, rule: Rule) -> R:
    """404 as Neutron words it, then 403 unless the caller may ``rule`` its project."""
    if row is None:
        raise NotFound(f"{what} {ident} does not exist", neutron_type=_not_found_type(what))
    authorize(ctx, rule, row.project_id)
    return row


def _group(session: Session, ctx: RequestContext, group_id: str, rule: Rule) -> SecurityGroupRow:
    return _owned(ctx, repo.get_group(session, group_id), "Security group", group_id, rule)


def _converge_users(w: TreeWrite, group: SecurityGroupRow) -> None:
    for lb_id in groups.EMBEDDED.loadbalancers_using(w.session, group.project_id, group.id):
        w.converge_again(lb_id)


@router.get("/security-groups")
def list_groups(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        rows = [g for g in repo.all_groups(session) if allowed(ctx, Rule.READ, g.project_id)]
        rules = repo.rules_of(session, [g.id for g in rows])
        views = [group_view(g, [r for r in rules if r.security_group_id == g.id]) for g in rows]
    return {"security_groups": [v for v in views if matches(v, request)]}


@router.get("/security-groups/{group_id}")
def show_group(group_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        return {"security_group": _shown(session, _group(session, ctx, group_id, Rule.READ))}


@router.post("/security-groups", status_code=201)
def create_group(body: GroupCreateBody, call: Call = Depends(get_call)) -> JSONResponse:
    services, ctx = call
    sent = body.security_group
    project = owner_project(ctx, sent.project_id, sent.tenant_id)
    if project is None:
        raise Conflict("A security group needs a project.")
    with services.database.write() as session:
        row = groups.create_group(
            session, project, sent.name, sent.description, sent.stateful, utcnow()
        )
        view = _shown(session, row)
    return JSONResponse({"security_group": view}, status_code=201)


@router.put("/security-groups/{group_id}")
def update_group(
    group_id: str, body: GroupUpdateBody, call: Call = Depends(get_call)
) -> dict[str, Any]:
    services, ctx = call
    sent = body.security_group
    names = ("name", "description", "stateful")
    changes: dict[str, object] = {n: getattr(sent, n) for n in names if sent.given(n)}
    with services.database.write() as session:
        row = _group(session, ctx, group_id, Rule.WRITE)
        groups.update_group(session, row, changes)
        row.updated_at = utcnow()
        session.flush()
        return {"security_group": _shown(session, row)}


@router.delete("/security-groups/{group_id}", status_code=204)
def delete_group(group_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    with services.database.write() as session:
        groups.delete_group(session, _group(session, ctx, group_id, Rule.WRITE))
    return Response(status_code=204)


@router.get("/security-group-rules")
def list_rules(request: Request, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        views = [
            rule_view(r) for r in repo.all_rules(session) if allowed(ctx, Rule.READ, r.project_id)
        ]
    return {"security_group_rules": [v for v in views if matches(v, request)]}


def _rule(session: Session, ctx: RequestContext, rule_id: str, rule: Rule) -> SecurityGroupRuleRow:
    return _owned(ctx, repo.get_rule(session, rule_id), "Security group rule", rule_id, rule)


@router.get("/security-group-rules/{rule_id}")
def show_rule(rule_id: str, call: Call = Depends(get_call)) -> dict[str, Any]:
    services, ctx = call
    require_reader(ctx)
    with services.database.read() as session:
        return {"security_group_rule": rule_view(_rule(session, ctx, rule_id, Rule.READ))}


@router.post("/security-group-rules", status_code=201)
def create_rule(body: RuleCreateBody, call: Call = Depends(get_call)) -> JSONResponse:
    services, ctx = call
    sent = body.security_group_rule
    named = owner_project(ctx, sent.project_id, sent.tenant_id)
    request = groups.NewRule(
        security_group_id=sent.security_group_id,
        direction=sent.direction,
        ethertype=sent.ethertype,
        protocol=None if sent.protocol is None else str(sent.protocol),
        port_range_min=sent.port_range_min,
        port_range_max=sent.port_range_max,
        remote_ip_prefix=sent.remote_ip_prefix,
        remote_group_id=sent.remote_group_id,
        description=sent.description,
    )
    with tree_write(services) as w:
        group = _group(w.session, ctx, sent.security_group_id, Rule.WRITE)
        if named is not None and named != group.project_id:
            raise Conflict("A rule belongs to its security group's project.")
        row = groups.create_rule(w.session, group, request, w.now)
        _converge_users(w, group)
        view = rule_view(row)
    return JSONResponse({"security_group_rule": view}, status_code=201)


@router.delete("/security-group-rules/{rule_id}", status_code=204)
def delete_rule(rule_id: str, call: Call = Depends(get_call)) -> Response:
    services, ctx = call
    with tree_write(services) as w:
        row = _rule(w.session, ctx, rule_id, Rule.WRITE)
        group = groups.require_group(w.session, row.security_group_id)
        w.session.delete(row)
        w.session.flush()
        _converge_users(w, group)
    return Response(status_code=204)
