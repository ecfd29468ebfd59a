"""Access-log rendering: Octavia's fields per listener, nothing without a socket."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lbaas.model.enums import ListenerProtocol as LP
from lbaas.model.graph import LoadBalancer
from lbaas.render.haproxy import render_haproxy_config
from lbaas.render.haproxy.access_log import access_log_format
from lbaas.render.haproxy.quoting import quoted
from tests.support.graphs import listener, load_balancer, pool

from .golden_cases import GOLDEN_CONTEXT
from .haproxy_runner import check_config

SOCKET = "/var/lib/lbaas/amphorae-logs/a.sock"


def _graph() -> LoadBalancer:
    web = listener("web", LP.HTTP, 80, default_pool="p")
    raw = listener("raw", LP.TCP, 81, default_pool="p")
    return load_balancer([web, raw], pools=[pool("p")])


def test_every_listener_logs_to_the_agent_socket_in_octavias_field_order(
    tmp_path: Path,
) -> None:
    lb = _graph()
    text = render_haproxy_config(lb, replace(GOLDEN_CONTEXT, access_log_socket=SOCKET))
    assert "    log ring@access_log len 8192 format raw local0 info\n" in text
    ring = text.split("\nring access_log\n", 1)[1].split("\n\n", 1)[0].split("\n")
    assert [line.strip() for line in ring] == [
        "format raw",
        "maxlen 8192",
        "size 16777216",
        "timeout connect 5s",
        "timeout server 30s",
        f'server agent "unix@{SOCKET}" log-proto legacy',
    ]
    for item in lb.listeners:
        http = item.protocol is LP.HTTP
        expected = access_log_format(lb.project_id, lb.id, item.id, http, False, ipv4=True)
        assert f"log-format {quoted(expected)}" in text
    path = tmp_path / "haproxy.cfg"
    path.write_text(text)
    done = check_config(path)
    assert done.returncode == 0, done.stderr


def test_http_and_tcp_lines_have_the_same_fields() -> None:
    http = access_log_format("p", "lb", "li", True, False).split(" ")
    tcp = access_log_format("p", "lb", "li", False, False).split(" ")
    assert http[:3] == tcp[:3] == ["p", "lb", "li"]
    assert (http[6], http[7]) == ("%{+Q}r", "%ST")
    assert (tcp[6], tcp[7]) == ('"-"', "-")
    assert http[-4:] == tcp[-4:] == ["%b", "%s", "%Tt", "%tsc"]
    assert len(http) == len(tcp)


def test_an_unusual_project_id_is_made_safe_not_refused() -> None:
    assert access_log_format("a b%c", "lb", "li", True, False).startswith("a_b_c lb li ")


def test_only_a_listener_terminating_tls_fetches_the_client_certificate_fields() -> None:
    terminated = access_log_format("p", "lb", "li", True, True).split(" ")
    plain = access_log_format("p", "lb", "li", True, False).split(" ")
    assert terminated[10:12] == ["%[ssl_c_verify]", "%{+Q}[ssl_c_s_dn]"]
    # What HAProxy writes when both fetches fail, so a line reads the same either way.
    assert plain[10:12] == ["-", '""']
    assert len(terminated) == len(plain)


def test_without_a_socket_nothing_is_logged() -> None:
    lines = [line.strip() for line in render_haproxy_config(_graph(), GOLDEN_CONTEXT).splitlines()]
    assert not [line for line in lines if line.startswith(("log ", "log-format", "ring "))]


def test_an_ipv4_frontend_prints_the_client_without_inet_ntop_and_an_ipv6_one_with_it() -> None:
    lb = _graph()
    four = render_haproxy_config(lb, replace(GOLDEN_CONTEXT, access_log_socket=SOCKET))
    six = render_haproxy_config(
        lb, replace(GOLDEN_CONTEXT, access_log_socket=SOCKET, bind_address="fd00::10")
    )
    assert four.count(" %[src,be2dec(.,1)] %cp ") == 2 and " %ci " not in four
    assert six.count(" %ci %cp ") == 2 and "be2dec" not in six
