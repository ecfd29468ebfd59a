"""Expiry of the certificates listeners serve (TERMINATED_HTTPS, PROMETHEUS), read at scrape
time.

``lbaas_listener_certificate_expiry_seconds`` is, per listener and per certificate it
serves (default and SNI), the seconds left before the certificate's ``notAfter`` (negative
once expired): an alert on ``< 14 * 86400`` reports a listener whose certificate expires
soon, as the converge log line does (``providers.amphora.tls_material``). A secret's
payload never changes in the key manager (Barbican's rule), so each reference is opened
once per process and its ``notAfter`` kept; a deleted secret drops out of the figures.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lbaas.db.engine import Database
from lbaas.db.loadbalancers.loadbalancer_repo import listener_certificate_refs
from lbaas.errors import PermanentError
from lbaas.keyrefs import certificates as certificate_refs
from lbaas.keyrefs.base import KeyMaterial, Unresolvable
from lbaas.model.enums import ListenerProtocol

log = logging.getLogger(__name__)
# The protocols whose listeners may serve a certificate (rows without one add nothing).
_TERMINATING = (ListenerProtocol.TERMINATED_HTTPS.value, ListenerProtocol.PROMETHEUS.value)


class CertificateExpiryCollector(Collector):
    """Seconds to ``notAfter`` of every certificate a terminating listener serves."""

    def __init__(self, database: Database, material: KeyMaterial) -> None:
        self._database = database
        self._material = material
        self._not_after: dict[tuple[str, str], dt.datetime] = {}

    def _expiry(self, project_id: str, ref: str) -> dt.datetime | None:
        key = (project_id, ref)
        if key not in self._not_after:
            try:
                found = certificate_refs.server_certificate(self._material, project_id, ref)
            except (Unresolvable, PermanentError) as exc:
                log.warning("certificate %s not readable for its expiry: %s", ref, exc)
                return None
            self._not_after[key] = found.certificate.not_valid_after_utc
        return self._not_after[key]

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "lbaas_listener_certificate_expiry_seconds",
            "Seconds before a certificate served by a listener (TERMINATED_HTTPS or PROMETHEUS) "
            "expires "
            "(negative: expired).",
            labels=["listener_id", "loadbalancer_id", "certificate_ref"],
        )
        rows = listener_certificate_refs(self._database, _TERMINATING)
        now = dt.datetime.now(dt.UTC)
        for listener_id, lb_id, project_id, default_ref, sni_refs in rows:
            refs = dict.fromkeys([default_ref, *(sni_refs or [])])
            for ref in (r for r in refs if r):
                not_after = self._expiry(project_id, ref)
                if not_after is not None:
                    left = (not_after - now).total_seconds()
                    family.add_metric([listener_id, lb_id, ref], round(left))
        yield family
