"""Health monitors as HAProxy server checks.

HAProxy checks servers itself, so a monitor becomes a few backend directives plus ``check``
and its timing on every server line: ``delay`` is ``inter``, ``max_retries`` is ``rise``
(consecutive successes to go up), ``max_retries_down`` is ``fall``, and ``timeout`` is the
backend's ``timeout check``. A disabled monitor renders no check at all, so its members are
reported as unchecked, which is what Octavia's NO_MONITOR means.

The types map as follows:

* TCP: a plain connect check.
* HTTP and HTTPS: ``option httpchk`` with an ``http-check send`` request line and an
  ``http-check expect status`` list. HAProxy 2.2+ takes Octavia's three expected_codes
  forms natively (``200``, ``200,202``, ``200-204``), so no regular expression is built.
  HTTPS checks run over TLS without verifying the member's certificate, as Octavia does.
* TLS-HELLO: a TLS handshake without verification (``check-ssl``). HAProxy's older
  ``option ssl-hello-chk`` sends an SSLv3-style hello that modern TLS-only servers may
  refuse; a real handshake checks what matters, that the member speaks TLS.
* PING: HAProxy has no ICMP check, so an external program from the context is run. HAProxy
  passes it the member's traffic address, not ``addr``; a member's monitor_address is
  therefore not honoured by PING checks.
* UDP-CONNECT and SCTP: only for UDP/SCTP pools, which this renderer refuses.

Octavia allows 0 for delay and timeout; HAProxy rejects ``inter 0``, so a 0 delay checks
every second, and a 0 timeout leaves the check bounded by ``inter`` alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never

from lbaas.errors import PermanentError
from lbaas.model.enums import HealthMonitorType, HttpMethod
from lbaas.model.graph import HealthMonitor
from lbaas.render.haproxy.context import HaproxyContext
from lbaas.render.haproxy.inputs import has_control_characters, is_expected_codes
from lbaas.render.haproxy.unsupported import refusal
from lbaas.render.haproxy.view import HealthCheck, HttpCheck


def health_check_of(monitor: HealthMonitor | None, ctx: HaproxyContext) -> HealthCheck | None:
    """The checks a pool's monitor asks for, or None when the pool is not checked."""
    if monitor is None or not monitor.admin_state_up:
        return None
    base = HealthCheck(
        interval_ms=max(monitor.delay, 1) * 1000,
        timeout_ms=monitor.timeout * 1000 if monitor.timeout > 0 else None,
        rise=max(monitor.max_retries, 1),
        fall=max(monitor.max_retries_down, 1),
    )
    kind = monitor.type
    if kind is HealthMonitorType.TCP:
        return base
    if kind is HealthMonitorType.HTTP:
        return replace(base, http=http_check_of(monitor))
    if kind is HealthMonitorType.HTTPS:
        return replace(base, http=http_check_of(monitor), tls=True, sni=monitor.domain_name)
    if kind is HealthMonitorType.TLS_HELLO:
        return replace(base, tls=True, sni=monitor.domain_name)
    if kind is HealthMonitorType.PING:
        if ctx.external_check_script is None:
            raise refusal("PING health monitors are not enabled on this provider.")
        return replace(base, external_command=ctx.external_check_script)
    if kind is HealthMonitorType.UDP_CONNECT or kind is HealthMonitorType.SCTP:
        raise refusal(f"{kind} health monitors need a UDP or SCTP pool.")
    assert_never(kind)


def http_check_of(monitor: HealthMonitor) -> HttpCheck:
    """The request and the accepted statuses of an HTTP or HTTPS monitor."""
    for name, text in (("url_path", monitor.url_path), ("domain_name", monitor.domain_name)):
        if text is not None and has_control_characters(text):
            raise PermanentError(
                f"The health monitor's {name} contains control characters.",
                f"control characters in {name} {text!r}",
            )
    return HttpCheck(
        method=str(monitor.http_method or HttpMethod.GET),
        uri=monitor.url_path or "/",
        version=_http_version(monitor.http_version),
        host=monitor.domain_name,
        expect_status=expected_statuses(monitor.expected_codes),
    )


def expected_statuses(expected_codes: str | None) -> str:
    """Octavia's expected_codes (``200``, ``200, 202``, ``200-204``) as HAProxy's list."""
    text = "200" if expected_codes is None else expected_codes
    if not is_expected_codes(text):
        raise PermanentError(
            f"Invalid expected_codes {text!r} on a health monitor.",
            f"cannot render expected_codes {text!r}",
        )
    return ",".join(item.strip() for item in text.split(","))


def _http_version(version: float | None) -> str:
    if version is None or version == 1.0:
        return "HTTP/1.0"
    if version == 1.1:
        return "HTTP/1.1"
    raise PermanentError(
        f"Invalid http_version {version!r} on a health monitor.",
        f"cannot render http_version {version!r}",
    )
