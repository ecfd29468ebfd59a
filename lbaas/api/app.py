"""The API application factory: routers, error mapping and the edge middleware."""

from __future__ import annotations

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp

from lbaas import __version__
from lbaas.api.edge import EdgeMiddleware
from lbaas.api.errors import install_error_handlers
from lbaas.api.metrics import MetricsPage
from lbaas.api.openapi import describe_errors
from lbaas.api.query_hook import query_parameters_hook
from lbaas.api.request_guard import RequestGuard
from lbaas.api.routers import (
    ROUTERS,
    compute,
    dashboard,
    healthcheck,
    identity,
    metadata,
    metrics,
    networking,
    networking_ports,
    networking_security_groups,
    versions,
)
from lbaas.api.services import ApiServices
from lbaas.api.validation import operator_policy
from lbaas.metadata.signing import shared_secret


def create_app(services: ApiServices) -> FastAPI:
    operator_policy.check_defaults(services.settings.api)
    _ = services.policy  # a broken policy file stops the start, not the first request
    app = FastAPI(
        title="lbaas",
        version=__version__,
        description="Load balancing as a service, wire-compatible with OpenStack Octavia v2.",
        docs_url=None,
        redoc_url=None,
        telemetry={
            "tracing": services.settings.api.telemetry,
            "metrics": services.settings.api.telemetry,
            "logs": services.settings.api.telemetry,
            "operation_spans": services.settings.api.telemetry,
        },
    )
    app.state.services = services
    install_error_handlers(app)
    app.include_router(versions.router)
    for router in ROUTERS:
        app.include_router(router, prefix="/v2", dependencies=[Depends(query_parameters_hook)])
    # The stock CLI discovers "v2" from our root document and asks the Networking API
    # there too, so the registry is served under both /v2.0 (Neutron's) and /v2.
    app.include_router(networking.router, prefix="/v2.0")
    app.include_router(networking.router, prefix="/v2")
    for prefix in ("/v2.0", "/v2"):
        app.include_router(networking_ports.router, prefix=prefix)
        app.include_router(networking_security_groups.router, prefix=prefix)
    app.include_router(compute.router)
    app.include_router(identity.router)
    if services.settings.metadata.enabled:
        app.state.metadata_secret = shared_secret(
            services.settings.metadata.shared_secret, services.settings.state_dir.absolute()
        )
        app.include_router(metadata.router)
    if services.settings.api.healthcheck_enabled:
        app.include_router(healthcheck.router)
    if services.settings.api.dashboard_enabled:
        app.include_router(dashboard.router)
    describe_errors(app)
    if services.settings.api.metrics_enabled:
        app.state.metrics_page = MetricsPage(services)
        app.include_router(metrics.router)
    return app


def create_asgi_app(services: ApiServices) -> ASGIApp:
    """The app wrapped in the edge middleware: what servers and tests run."""
    app = create_app(services)
    metrics = services.metrics if services.settings.api.metrics_enabled else None
    guarded = RequestGuard(app, services.settings.api.max_body_bytes)
    return EdgeMiddleware(guarded, metrics)
