"""Listeners become frontends: mode, limits, timeouts, CIDRs, headers, fallbacks."""

from __future__ import annotations

import pytest

from lbaas.model.enums import ListenerProtocol as LP
from lbaas.model.graph import Listener, ListenerTimeouts
from lbaas.render.haproxy.frontend import (
    NO_POOL_HTTP_NOTE,
    NO_POOL_TCP_NOTE,
    frontend_of,
    header_insertions,
)
from lbaas.render.haproxy.timeouts import HAPROXY_MAX_TIMEOUT_MS
from lbaas.render.haproxy.view import Frontend, HeaderInsertion, Mode
from tests.support.graphs import listener, load_balancer, pool, uid

from .golden_cases import GOLDEN_CONTEXT


def _frontend(lst: Listener) -> Frontend:
    return frontend_of(lst, load_balancer([lst], [pool("web")]), GOLDEN_CONTEXT)


@pytest.mark.parametrize(
    ("protocol", "mode"),
    [(LP.HTTP, Mode.HTTP), (LP.TCP, Mode.TCP), (LP.HTTPS, Mode.TCP), (LP.PROMETHEUS, Mode.HTTP)],
)
def test_mode_by_protocol(protocol: LP, mode: Mode) -> None:
    assert _frontend(listener("l", protocol)).mode is mode


def test_binds_the_context_address_on_the_listener_port() -> None:
    frontend = _frontend(listener("l"))
    assert (frontend.bind_address, frontend.port) == ("127.0.10.5", 80)
    assert frontend.name == f"fe_{uid('listener', 'l')}"


@pytest.mark.parametrize(("limit", "maxconn"), [(-1, 50000), (0, 50000), (1, 1), (75000, 75000)])
def test_connection_limit(limit: int, maxconn: int) -> None:
    assert _frontend(listener("l", connection_limit=limit)).maxconn == maxconn


def test_timeouts() -> None:
    frontend = _frontend(listener("l", timeouts=ListenerTimeouts(client_data=0, tcp_inspect=1500)))
    assert frontend.timeout_client_ms == HAPROXY_MAX_TIMEOUT_MS
    assert frontend.inspect_delay_ms == 1500


def test_allowed_cidrs_are_normalised_deduplicated_and_sorted() -> None:
    frontend = _frontend(
        listener(
            "l", allowed_cidrs=["2001:db8::1/32", "192.0.2.77/24", "10.0.0.0/8", "192.0.2.0/24"]
        )
    )
    assert frontend.allowed_cidrs == ("10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32")


def test_default_pool_is_the_default_backend() -> None:
    frontend = _frontend(listener("l", default_pool="web"))
    assert frontend.default_backend == f"be_{uid('pool', 'web')}"
    assert not frontend.reject_all and not frontend.notes


def test_without_default_pool_http_answers_503_and_tcp_closes() -> None:
    http = _frontend(listener("l", LP.HTTP))
    assert http.default_backend is None and not http.reject_all
    assert http.notes == (NO_POOL_HTTP_NOTE,)
    tcp = _frontend(listener("l", LP.TCP))
    assert tcp.reject_all and tcp.notes == (NO_POOL_TCP_NOTE,)


def test_a_default_pool_missing_from_the_graph_counts_as_none() -> None:
    assert _frontend(listener("l", LP.TCP, default_pool="gone")).reject_all


def test_prometheus_serves_the_exporter_only() -> None:
    frontend = _frontend(listener("l", LP.PROMETHEUS))
    assert frontend.prometheus_exporter
    assert frontend.default_backend is None and not frontend.reject_all and not frontend.notes


@pytest.mark.parametrize(("lb_up", "listener_up"), [(False, True), (True, False), (False, False)])
def test_disabled_listener_or_load_balancer_renders_a_disabled_frontend(
    lb_up: bool, listener_up: bool
) -> None:
    lst = listener("l", admin=listener_up)
    lb = load_balancer([lst], admin=lb_up)
    assert not frontend_of(lst, lb, GOLDEN_CONTEXT).enabled


def test_headers_are_case_insensitive_and_only_true_counts() -> None:
    headers = {
        "x-forwarded-for": "TRUE",
        "X-FORWARDED-PORT": "true",
        "X-Forwarded-Proto": "false",
        "X-Real-IP": "yes",
        "X-Client-IP": " True ",
    }
    frontend = _frontend(listener("l", insert_headers=headers))
    assert frontend.forward_for
    assert frontend.header_insertions == (
        HeaderInsertion("X-Forwarded-Port", "%[dst_port]"),
        HeaderInsertion("X-Client-IP", "%[src]"),
    )


def test_all_header_insertions_in_a_fixed_order() -> None:
    wanted = {
        name: "true"
        for name in (
            "X-Real-IP",
            "X-Client-IP",
            "X-Forwarded-IP",
            "X-Forwarded-Proto",
            "X-Forwarded-Port",
        )
    }
    assert [h.name for h in header_insertions(wanted)] == [
        "X-Forwarded-Port",
        "X-Forwarded-Proto",
        "X-Forwarded-IP",
        "X-Client-IP",
        "X-Real-IP",
    ]
    assert header_insertions({"X-Forwarded-Proto": "true"}) == (
        HeaderInsertion("X-Forwarded-Proto", "http"),
    )


def test_headers_are_ignored_on_tcp_listeners() -> None:
    frontend = _frontend(listener("l", LP.TCP, insert_headers={"X-Forwarded-For": "true"}))
    assert not frontend.forward_for and not frontend.header_insertions
