"""Health monitors become server checks: timing, request, accepted statuses, TLS, PING."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lbaas.errors import PermanentError
from lbaas.model.enums import HealthMonitorType as HM
from lbaas.model.enums import HttpMethod
from lbaas.render.haproxy.healthcheck import expected_statuses, health_check_of
from lbaas.render.haproxy.view import HealthCheck, HttpCheck
from tests.support.graphs import monitor

from .golden_cases import GOLDEN_CONTEXT, PING_SCRIPT


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (None, "200"),
        ("200", "200"),
        ("200, 202", "200,202"),
        ("200,202 , 204", "200,202,204"),
        ("200-204", "200-204"),
    ],
)
def test_expected_codes_become_an_haproxy_status_list(codes: str | None, expected: str) -> None:
    assert expected_statuses(codes) == expected


# A range inside a list is refused as the API refuses it (one rule, ``inputs.py``), and
# so are digits of other scripts, which ``\d`` would have matched.
@pytest.mark.parametrize(
    "codes",
    ["", "2xx", "200;201", "204-200", "20", "200-", "200,,201", "301-302, 200", "２００", "200\n"],
)
def test_malformed_expected_codes_are_refused(codes: str) -> None:
    with pytest.raises(PermanentError):
        expected_statuses(codes)


def test_timing_maps_delay_timeout_and_retries() -> None:
    check = health_check_of(
        monitor("hm", HM.TCP, delay=7, timeout=4, max_retries=5, max_retries_down=2),
        GOLDEN_CONTEXT,
    )
    assert check == HealthCheck(interval_ms=7000, timeout_ms=4000, rise=5, fall=2)


def test_zero_delay_and_timeout_stay_valid_for_haproxy() -> None:
    check = health_check_of(monitor("hm", delay=0, timeout=0), GOLDEN_CONTEXT)
    assert check is not None
    assert check.interval_ms == 1000
    assert check.timeout_ms is None


def test_disabled_or_missing_monitor_means_no_check() -> None:
    assert health_check_of(None, GOLDEN_CONTEXT) is None
    assert health_check_of(monitor("hm", admin=False), GOLDEN_CONTEXT) is None


def test_http_monitor_defaults_follow_octavia() -> None:
    check = health_check_of(monitor("hm", HM.HTTP), GOLDEN_CONTEXT)
    assert check is not None
    assert check.http == HttpCheck("GET", "/", "HTTP/1.0", None, "200")
    assert not check.tls


def test_http_monitor_fields_are_carried() -> None:
    hm = monitor(
        "hm",
        HM.HTTP,
        method=HttpMethod.OPTIONS,
        url_path="/ping",
        expected_codes="204",
        http_version=1.1,
        domain_name="example.org",
    )
    check = health_check_of(hm, GOLDEN_CONTEXT)
    assert check is not None
    assert check.http == HttpCheck("OPTIONS", "/ping", "HTTP/1.1", "example.org", "204")


def test_https_monitor_is_an_http_check_over_tls_with_sni() -> None:
    check = health_check_of(monitor("hm", HM.HTTPS, domain_name="a.example"), GOLDEN_CONTEXT)
    assert check is not None and check.http is not None
    assert check.tls and check.sni == "a.example"


def test_tls_hello_is_a_handshake_without_request() -> None:
    check = health_check_of(monitor("hm", HM.TLS_HELLO), GOLDEN_CONTEXT)
    assert check is not None
    assert check.tls and check.http is None and check.external_command is None


def test_ping_runs_the_context_script() -> None:
    check = health_check_of(monitor("hm", HM.PING), GOLDEN_CONTEXT)
    assert check is not None and check.external_command == PING_SCRIPT


def test_ping_without_a_script_is_refused() -> None:
    ctx = replace(GOLDEN_CONTEXT, external_check_script=None)
    with pytest.raises(PermanentError, match="PING"):
        health_check_of(monitor("hm", HM.PING), ctx)


@pytest.mark.parametrize("kind", [HM.UDP_CONNECT, HM.SCTP])
def test_datagram_monitors_are_refused(kind: HM) -> None:
    with pytest.raises(PermanentError):
        health_check_of(monitor("hm", kind), GOLDEN_CONTEXT)


def test_unknown_http_version_is_refused() -> None:
    with pytest.raises(PermanentError):
        health_check_of(monitor("hm", HM.HTTP, http_version=2.0), GOLDEN_CONTEXT)
