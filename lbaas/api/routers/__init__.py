"""One router per resource of the API; ``ROUTERS`` are mounted under ``/v2``."""

from __future__ import annotations

from fastapi import APIRouter

from lbaas.api.routers import loadbalancers

ROUTERS: list[APIRouter] = [loadbalancers.router]
