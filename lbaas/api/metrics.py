"""``/metrics``: what one scrape of an API process shows, and the route label of a request.

A scrape is this process's own instruments (API latency and responses; in ``lbaas serve``
also the health manager's counts, and in tests the in-process worker's converges) followed
by what the database holds, read at that moment (``lbaas.metrics.database``; the
per-object part through ``lbaas.metrics.object_cache``). Route labels
are templates, never raw paths, so the label set is fixed by the routes the app declares.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.registry import Collector
from starlette.types import Scope

from lbaas.api.services import ApiServices
from lbaas.metrics.certificates import CertificateExpiryCollector
from lbaas.metrics.database import ControlPlaneCollector
from lbaas.metrics.object_cache import ObjectExposition
from lbaas.metrics.process import UNMATCHED_ROUTE, Scrape
from lbaas.metrics.wire_versions import WireVersionCollector


def route_template(scope: Scope) -> str:
    """The path template of the route that served ``scope``, or ``UNMATCHED_ROUTE``.

    FastAPI records the matched route in the scope, but an included router's route knows
    its path without the prefix it was included under (``/lbaas/loadbalancers/{lb_id}``
    under ``/v2``). No route takes a ``{name:path}`` parameter, so the template has one
    segment per segment of the path it matched, and the leading segments the route does
    not cover are the include prefix: literal by construction (``/v2``, ``/v2.0``).
    """
    route: Any = scope.get("route")
    template = getattr(route, "path", None)
    if not isinstance(template, str):
        return UNMATCHED_ROUTE
    path: str = scope["path"]
    covered = template.count("/")
    prefix = path.split("/")[: path.count("/") - covered + 1]
    return "/".join(prefix) + template


class MetricsPage:
    """Everything ``/metrics`` shows for this process: its own instruments and the control
    plane's state through ``prometheus_client``, then every object (``ObjectExposition``,
    which keeps what did not move since the last scrape)."""

    def __init__(self, services: ApiServices) -> None:
        self._objects = ObjectExposition(services.database)
        collectors: list[Collector] = [
            services.metrics.registry,
            ControlPlaneCollector(services.database, services.settings.health.stale_after),
            WireVersionCollector(),  # this code's wire version: which release answers
        ]
        if services.vault is not None or services.settings.keymanager.barbican_endpoints:
            material = services.key_material
            collectors.append(CertificateExpiryCollector(services.database, material))
        self._collectors = Scrape(tuple(collectors))

    def render(self) -> bytes:
        head = generate_latest(self._collectors)
        return head + self._objects.text().encode()
