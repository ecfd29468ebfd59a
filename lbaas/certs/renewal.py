"""When a certificate is renewed, and the loop that renews them while processes run.

A certificate is due for renewal once two thirds of its lifetime have passed (Let's
Encrypt's and cert-manager's habit): a year-long certificate is renewed with four months
left, so a renewal that fails (an agent unreachable for a while) is retried for months
before anything expires. The moment depends only on the certificate and the time asked
about, so it is tested with a clock passed in.

``RenewalLoop`` runs renewal checks (each a callable given the time) every ``interval``
seconds in a daemon thread; a check that fails is logged and tried again next round.
What makes a renewal reach the running TLS servers and clients is
``lbaas.certs.reloading``.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence

from cryptography import x509

from lbaas.background import BackgroundLoop

log = logging.getLogger(__name__)

RENEW_AFTER = 2 / 3
"""The fraction of its lifetime after which a certificate is renewed."""

Clock = Callable[[], datetime.datetime]
Check = Callable[[datetime.datetime], object]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def renewal_time(certificate: x509.Certificate) -> datetime.datetime:
    """The moment ``certificate`` is due for renewal."""
    start, end = certificate.not_valid_before_utc, certificate.not_valid_after_utc
    return start + (end - start) * RENEW_AFTER


def renewal_due(certificate: x509.Certificate, now: datetime.datetime) -> bool:
    return now >= renewal_time(certificate)


class RenewalLoop(BackgroundLoop):
    """Calls every check with ``clock()`` every ``interval`` seconds until stopped."""

    def __init__(self, checks: Sequence[Check], interval: float, clock: Clock = utc_now) -> None:
        self._checks = tuple(checks)
        self._interval = interval
        self._clock = clock
        super().__init__("certificate-renewal", stop_timeout=30.0)

    def run_once(self) -> int:
        """One round now; how many checks failed."""
        failed = 0
        now = self._clock()
        for check in self._checks:
            # One failing renewal (an agent away) must not stop the others.
            try:
                check(now)
            except Exception:  # noqa: BLE001 - logged; the next round tries again
                failed += 1
                log.exception("certificate renewal check failed")
        return failed

    def _run(self) -> None:
        self.run_once()
        while not self._stop.wait(self._interval):
            self.run_once()
