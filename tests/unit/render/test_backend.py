"""Pools become backends: mode from the users, balancing, persistence and server flags."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lbaas.errors import PermanentError
from lbaas.model.enums import HealthMonitorType as HM
from lbaas.model.enums import LbAlgorithm as Algo
from lbaas.model.enums import ListenerProtocol as LP
from lbaas.model.enums import PersistenceType as Sticky
from lbaas.model.enums import PoolProtocol as PP
from lbaas.render.haproxy.backend import backend_mode, backend_of
from lbaas.render.haproxy.view import (
    AppCookieStickiness,
    Balance,
    CookieInsertion,
    Mode,
    ProxyProtocol,
    SourceStickiness,
)
from tests.support.graphs import listener, member, monitor, persistence, pool, uid

from .golden_cases import GOLDEN_CONTEXT

HTTP_USER = (listener("http"),)
TCP_USER = (listener("tcp", LP.TCP, 9000),)


def test_mode_is_http_when_any_user_is_http() -> None:
    assert backend_mode(HTTP_USER) is Mode.HTTP
    assert backend_mode(TCP_USER) is Mode.TCP
    assert backend_mode(TCP_USER + HTTP_USER) is Mode.HTTP
    assert backend_mode((listener("https", LP.HTTPS, 443),)) is Mode.TCP


@pytest.mark.parametrize(
    ("algorithm", "balance", "consistent"),
    [
        (Algo.ROUND_ROBIN, Balance.ROUND_ROBIN, False),
        (Algo.LEAST_CONNECTIONS, Balance.LEAST_CONNECTIONS, False),
        (Algo.SOURCE_IP, Balance.SOURCE, True),
    ],
)
def test_algorithms(algorithm: Algo, balance: Balance, consistent: bool) -> None:
    backend = backend_of(pool("p", algorithm=algorithm), HTTP_USER, GOLDEN_CONTEXT)
    assert backend.balance is balance
    assert backend.consistent_hashing is consistent


def test_source_ip_port_is_refused() -> None:
    with pytest.raises(PermanentError):
        backend_of(pool("p", algorithm=Algo.SOURCE_IP_PORT), HTTP_USER, GOLDEN_CONTEXT)


def test_disabled_pool_is_a_disabled_backend() -> None:
    assert not backend_of(pool("p", admin=False), HTTP_USER, GOLDEN_CONTEXT).enabled


def test_member_flags() -> None:
    members = [
        member("drain", "192.0.2.1", weight=0),
        member("backup", "192.0.2.2", backup=True),
        member("down", "192.0.2.3", admin=False),
        member("too-heavy", "192.0.2.4", weight=1000),
    ]
    backend = backend_of(pool("p", members), HTTP_USER, GOLDEN_CONTEXT)
    servers = {server.name.removeprefix("srv_"): server for server in backend.servers}
    assert servers[uid("member", "drain")].weight == 0
    assert servers[uid("member", "backup")].backup
    assert not servers[uid("member", "down")].enabled
    assert servers[uid("member", "too-heavy")].weight == 256


def test_servers_are_sorted_by_member_id_whatever_the_graph_order() -> None:
    members = [member(f"m{i}", f"192.0.2.{i}") for i in range(1, 9)]
    forward = backend_of(pool("p", members), HTTP_USER, GOLDEN_CONTEXT)
    backward = backend_of(pool("p", members[::-1]), HTTP_USER, GOLDEN_CONTEXT)
    assert forward.servers == backward.servers
    assert [s.name for s in forward.servers] == sorted(s.name for s in forward.servers)


def test_addresses_are_normalised_and_refused_when_invalid() -> None:
    backend = backend_of(
        pool(
            "p", [member("m", "2001:DB8:0::1", monitor_address="2001:db8:0:0::2")], hm=monitor("hm")
        ),
        HTTP_USER,
        GOLDEN_CONTEXT,
    )
    assert backend.servers[0].address == "2001:db8::1"
    assert backend.servers[0].check_address == "2001:db8::2"
    with pytest.raises(PermanentError):
        backend_of(pool("p", [member("m", "10.0.0.1 backup")]), HTTP_USER, GOLDEN_CONTEXT)


def test_monitor_address_and_port_only_with_a_check() -> None:
    m = member("m", "192.0.2.1", monitor_address="198.51.100.1", monitor_port=9000)
    checked = backend_of(pool("p", [m], hm=monitor("hm")), HTTP_USER, GOLDEN_CONTEXT)
    assert checked.servers[0].checked
    assert (checked.servers[0].check_address, checked.servers[0].check_port) == (
        "198.51.100.1",
        9000,
    )
    unchecked = backend_of(pool("p", [m], hm=monitor("hm", admin=False)), HTTP_USER, GOLDEN_CONTEXT)
    assert not unchecked.servers[0].checked
    assert unchecked.servers[0].check_address is None and unchecked.servers[0].check_port is None


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        (PP.PROXY, ProxyProtocol.V1),
        (PP.PROXYV2, ProxyProtocol.V2),
        (PP.HTTP, None),
        (PP.HTTPS, None),
    ],
)
def test_proxy_protocol_pools_send_the_header(protocol: PP, expected: ProxyProtocol | None) -> None:
    backend = backend_of(
        pool("p", [member("m", "192.0.2.1")], protocol=protocol), TCP_USER, GOLDEN_CONTEXT
    )
    assert backend.servers[0].proxy_protocol is expected


def test_source_ip_persistence_follows_the_vip_family() -> None:
    sticky = pool("p", sticky=persistence(Sticky.SOURCE_IP))
    v4 = backend_of(sticky, TCP_USER, GOLDEN_CONTEXT)
    v6 = backend_of(sticky, TCP_USER, replace(GOLDEN_CONTEXT, bind_address="2001:db8::5"))
    assert v4.persistence == SourceStickiness("ip", 1800)
    assert v6.persistence == SourceStickiness("ipv6", 1800)


def test_http_cookie_persistence_names_servers_by_member_id() -> None:
    backend = backend_of(
        pool("p", [member("m", "192.0.2.1")], sticky=persistence(Sticky.HTTP_COOKIE)),
        HTTP_USER,
        GOLDEN_CONTEXT,
    )
    assert backend.persistence == CookieInsertion("SRV")
    assert backend.servers[0].cookie == uid("member", "m")


def test_app_cookie_persistence_uses_the_named_cookie() -> None:
    backend = backend_of(
        pool("p", sticky=persistence(Sticky.APP_COOKIE, "PHPSESSID")), HTTP_USER, GOLDEN_CONTEXT
    )
    assert backend.persistence == AppCookieStickiness("PHPSESSID", 1800)


@pytest.mark.parametrize("cookie", ["a b", "x)y", "q'"])
def test_app_cookie_names_that_would_break_the_fetch_are_refused(cookie: str) -> None:
    with pytest.raises(PermanentError):
        backend_of(
            pool("p", sticky=persistence(Sticky.APP_COOKIE, cookie)), HTTP_USER, GOLDEN_CONTEXT
        )


@pytest.mark.parametrize("kind", [Sticky.HTTP_COOKIE, Sticky.APP_COOKIE])
def test_cookie_persistence_is_left_out_of_tcp_backends_with_a_note(kind: Sticky) -> None:
    backend = backend_of(
        pool("p", [member("m", "192.0.2.1")], sticky=persistence(kind, "C")),
        TCP_USER,
        GOLDEN_CONTEXT,
    )
    assert backend.persistence is None
    assert backend.servers[0].cookie is None
    assert backend.notes and "HTTP mode" in backend.notes[0]


def test_health_check_is_attached_and_servers_are_checked() -> None:
    backend = backend_of(
        pool("p", [member("m", "192.0.2.1")], hm=monitor("hm", HM.HTTP)), HTTP_USER, GOLDEN_CONTEXT
    )
    assert backend.health_check is not None and backend.health_check.http is not None
    assert backend.servers[0].checked
