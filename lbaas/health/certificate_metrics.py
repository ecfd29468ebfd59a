"""``lbaas_certificate_expiry_timestamp_seconds``: when the fleet's own certificates end.

One sample per certificate of the controller-agent link, in Unix seconds (Prometheus'
habit for absolute times: ``time()`` subtracts it): ``role="ca"`` (the signing CA),
``role="controller"`` (the client certificate of this state directory; ``host`` is this
machine's name) and ``role="agent"`` per host (``host`` its id), as the last renewal
round of this health manager saw it. Read at scrape time from files for the first two;
agents are not called at scrape time.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

from cryptography import x509
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lbaas.certs.authority import CA_CERT_FILE
from lbaas.health.certificates import CONTROLLER, FleetCertificates

NAME = "lbaas_certificate_expiry_timestamp_seconds"


def _not_after(path: object) -> float | None:
    try:
        with open(str(path), "rb") as pem:
            return x509.load_pem_x509_certificate(pem.read()).not_valid_after_utc.timestamp()
    except (OSError, ValueError):
        return None


class CertificateExpiryTimestamps(Collector):
    def __init__(self, certificates: FleetCertificates) -> None:
        self._certificates = certificates
        self._machine = socket.gethostname()

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            NAME,
            "When a certificate of the controller-agent link expires (Unix seconds): the "
            "signing CA, the controller's client certificate, each agent's (as last seen).",
            labels=["role", "host"],
        )
        pki = self._certificates.pki
        for role, host, path in (
            ("ca", "", pki / CA_CERT_FILE),
            (CONTROLLER, self._machine, pki / CONTROLLER / f"{CONTROLLER}.pem"),
        ):
            end = _not_after(path)
            if end is not None:
                family.add_metric([role, host], end)
        for host_id, not_after in sorted(self._certificates.seen.items()):
            family.add_metric(["agent", host_id], not_after.timestamp())
        yield family
