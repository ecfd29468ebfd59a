"""Just enough of the Identity API for ``--project`` lookups by the stock CLI.

lbaas keeps no project registry: any project id is taken to exist, named after itself.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from lbaas.api.routing import JsonRoute

router = APIRouter(route_class=JsonRoute, prefix="/v3", tags=["identity"])


def _project(project_id: str) -> dict[str, Any]:
    return {
        "id": project_id,
        "name": project_id,
        "domain_id": "default",
        "enabled": True,
        "description": "",
        "is_domain": False,
        "parent_id": "default",
        "tags": [],
        "links": {},
    }


@router.get("/projects/{project_id}")
def show_project(project_id: str) -> dict[str, Any]:
    return {"project": _project(project_id)}


@router.get("/projects")
def list_projects(request: Request) -> dict[str, Any]:
    name = request.query_params.get("name")
    return {"projects": [_project(name)] if name else [], "links": {}}
