"""The pure pool and health monitor rules, one behaviour per test, no database."""

from __future__ import annotations

import pytest

from lbaas.api.validation import healthmonitor as hm
from lbaas.api.validation import pool
from lbaas.errors import InvalidInput, ValidationFailure

# -- listener / pool protocols -----------------------------------------------------------


@pytest.mark.parametrize(
    ("listener", "pool_protocol"),
    [("HTTP", "HTTP"), ("HTTP", "PROXYV2"), ("HTTPS", "TCP"), ("TCP", "HTTPS"), ("UDP", "UDP")],
)
def test_compatible_protocols_pass(listener: str, pool_protocol: str) -> None:
    pool.check_listener_pool_protocols(listener, pool_protocol)


def test_incompatible_protocols_fail_with_reference_wording() -> None:
    with pytest.raises(ValidationFailure) as err:
        pool.check_listener_pool_protocols("TERMINATED_HTTPS", "HTTPS")
    assert err.value.message == (
        "Validation failure: The pool protocol 'HTTPS' is invalid while the listener "
        "protocol is 'TERMINATED_HTTPS'."
    )


def test_prometheus_listener_takes_no_pool() -> None:
    with pytest.raises(InvalidInput) as err:
        pool.check_listener_pool_protocols("PROMETHEUS", "HTTP")
    assert err.value.message == "Protocol PROMETHEUS listeners cannot have child objects."
    assert not isinstance(err.value, ValidationFailure)


# -- session persistence -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("sp", "protocol"),
    [
        (pool.Persistence("SOURCE_IP"), "HTTP"),
        (pool.Persistence("HTTP_COOKIE"), "TCP"),
        (pool.Persistence("APP_COOKIE", "JSESSIONID"), "HTTP"),
        (pool.Persistence("SOURCE_IP", None, 30, "255.255.255.0"), "UDP"),
        (pool.Persistence("SOURCE_IP"), "SCTP"),
        (pool.Persistence("SOURCE_IP", None, 0), "HTTP"),  # 0 counts as unset, as in Octavia
    ],
)
def test_valid_persistence(sp: pool.Persistence, protocol: str) -> None:
    pool.check_session_persistence(sp, protocol)


@pytest.mark.parametrize(
    ("sp", "protocol", "message"),
    [
        (pool.Persistence("APP_COOKIE"), "HTTP", 'Field "cookie_name" must be specified'),
        (pool.Persistence("SOURCE_IP", "c"), "HTTP", "can only be specified with"),
        (pool.Persistence("APP_COOKIE", "a=b"), "HTTP", 'Supplied "cookie_name" is invalid.'),
        (pool.Persistence("APP_COOKIE", "caf\u00e9"), "HTTP", "is invalid"),
        (pool.Persistence("APP_COOKIE", "a\tb"), "HTTP", "is invalid"),
        (pool.Persistence("HTTP_COOKIE", None, 5), "HTTP", "is only for UDP and SCTP"),
        (pool.Persistence("SOURCE_IP", None, None, "255.0.0.0"), "TCP", "is only for UDP"),
        (pool.Persistence("APP_COOKIE", "c"), "UDP", "Cookie names are not supported"),
        (pool.Persistence("HTTP_COOKIE"), "SCTP", "Session persistence of type HTTP_COOKIE"),
        (pool.Persistence("SOURCE_IP", "c"), "UDP", "only accepts: type, persistence_timeout"),
    ],
)
def test_invalid_persistence(sp: pool.Persistence, protocol: str, message: str) -> None:
    with pytest.raises(ValidationFailure) as err:
        pool.check_session_persistence(sp, protocol)
    assert message in err.value.message
    assert err.value.message.startswith("Validation failure: ")


def test_persistence_dict_has_all_four_keys() -> None:
    assert pool.Persistence("SOURCE_IP").as_dict() == {
        "type": "SOURCE_IP",
        "cookie_name": None,
        "persistence_timeout": None,
        "persistence_granularity": None,
    }


# -- TLS ------------------------------------------------------------------------------------


def test_tls_lists() -> None:
    pool.check_tls_versions(None)
    pool.check_tls_versions(["TLSv1.2", "TLSv1.3"])
    pool.check_alpn_protocols(["h2"])
    with pytest.raises(ValidationFailure, match="Empty TLS version list"):
        pool.check_tls_versions([])
    with pytest.raises(ValidationFailure, match="Invalid TLS versions: TLSv2, x"):
        pool.check_tls_versions(["TLSv1.2", "TLSv2", "x"])
    with pytest.raises(ValidationFailure, match="Empty ALPN protocol list"):
        pool.check_alpn_protocols([])
    with pytest.raises(ValidationFailure, match="Invalid ALPN protocol: spdy"):
        pool.check_alpn_protocols(["spdy"])


def test_tls_refs_on_create() -> None:
    pool.check_tls_refs_on_create(pool.TlsRefs())
    with pytest.raises(ValidationFailure, match="A CA certificate reference is required"):
        pool.check_tls_refs_on_create(pool.TlsRefs(None, None, "crl"))
    # Complete references pass these rules; whether they resolve is the key manager's
    # question, asked by the API (tests/api/test_keymanager.py, the TLS listener tests).
    pool.check_tls_refs_on_create(pool.TlsRefs("cert", "ca", "crl"))


def test_tls_refs_on_update() -> None:
    stored = pool.TlsRefs(None, "ca", "crl")
    pool.check_tls_refs_on_update(stored, {})
    pool.check_tls_refs_on_update(stored, {"tls_container_ref": None})
    with pytest.raises(ValidationFailure, match="cannot be removed when a certificate revocation"):
        pool.check_tls_refs_on_update(stored, {"ca_tls_container_ref": None})
    pool.check_tls_refs_on_update(stored, {"ca_tls_container_ref": None, "crl_container_ref": None})
    with pytest.raises(ValidationFailure, match="A CA reference is required to specify"):
        pool.check_tls_refs_on_update(pool.TlsRefs(), {"crl_container_ref": "crl"})
    with pytest.raises(ValidationFailure, match="A CA reference is required to specify"):
        pool.check_tls_refs_on_update(
            pool.TlsRefs(), {"ca_tls_container_ref": None, "crl_container_ref": "crl"}
        )
    pool.check_tls_refs_on_update(pool.TlsRefs(), {"tls_container_ref": "new"})


def test_cookie_names_are_rfc6265_tokens_haproxy_can_read() -> None:
    assert pool.is_cookie_name("JSESSIONID")
    assert pool.is_cookie_name("a-b_c.d!%&*+^`|~")
    # Token characters HAProxy's parser reads as comment, variable and quote.
    for bad in ("a#b", "a$b", "a'b"):
        assert not pool.is_cookie_name(bad), bad
    for bad in ("", "a b", "a;b", "a,b", 'a"b', "a/b", "a[b]", "a{b}", "a\x7fb", "a:b"):
        assert not pool.is_cookie_name(bad), bad


# -- health monitor types and HTTP fields ------------------------------------------------


def test_monitor_types_per_pool_protocol() -> None:
    for kind in ("HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO"):
        hm.check_type_for_pool(kind, "PROXY")
    for kind in ("UDP-CONNECT", "SCTP", "TCP", "HTTP"):
        hm.check_type_for_pool(kind, "UDP")
    with pytest.raises(ValidationFailure, match="The SCTP type is only supported for pools"):
        hm.check_type_for_pool("SCTP", "TCP")
    with pytest.raises(ValidationFailure, match="pool protocol is SCTP, so only a"):
        hm.check_type_for_pool("HTTPS", "SCTP")


def test_udp_connect_minimum_delay() -> None:
    hm.check_udp_connect_delay("UDP-CONNECT", 3, 3)
    hm.check_udp_connect_delay("TCP", 0, 3)
    with pytest.raises(ValidationFailure, match="delay value 2 should be larger than 3"):
        hm.check_udp_connect_delay("UDP-CONNECT", 2, 3)


def test_http_fields_on_create() -> None:
    assert hm.http_fields_on_create("HTTPS", {}) == {
        "http_method": "GET",
        "url_path": "/",
        "expected_codes": "200",
    }
    assert hm.http_fields_on_create("HTTP", {"url_path": "/x", "http_method": None}) == {
        "http_method": "GET",
        "url_path": "/x",
        "expected_codes": "200",
    }
    assert hm.http_fields_on_create("PING", {"url_path": None}) == dict.fromkeys(hm.HTTP_FIELDS)
    with pytest.raises(InvalidInput) as err:
        hm.http_fields_on_create("TLS-HELLO", {"expected_codes": "200"})
    assert err.value.message == (
        "expected_codes is not a valid option for health monitors of type TLS-HELLO"
    )


def test_http_fields_on_update_refuse_even_null() -> None:
    hm.check_http_fields_on_update("HTTP", {"url_path"})
    hm.check_http_fields_on_update("TCP", {"delay", "http_version"})
    with pytest.raises(InvalidInput, match="http_method is not a valid option"):
        hm.check_http_fields_on_update("TCP", {"http_method"})


def test_domain_name_needs_http_11() -> None:
    hm.check_domain_name(None, None)
    hm.check_domain_name("example.com", 1.1)
    with pytest.raises(ValidationFailure, match="'http_version' must be specified"):
        hm.check_domain_name("example.com", None)
    with pytest.raises(InvalidInput) as err:
        hm.check_domain_name("example.com", 1.0)
    assert err.value.message == (
        "http_version 1.0 is not a valid option for health monitors HTTP 1.1 domain name "
        "health check"
    )


def test_required_fields_cannot_be_nulled() -> None:
    hm.check_required_on_update({"delay": 1, "name": None})
    with pytest.raises(InvalidInput, match="None is not a valid option for timeout"):
        hm.check_required_on_update({"timeout": None})


# -- syntax predicates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["/", "/health", "/a/b?c=d&e=%2F", "/path;v=1", "/~user/x#frag", "/a:b@c"]
)
def test_good_url_paths(value: str) -> None:
    assert hm.is_url_path(value)


@pytest.mark.parametrize(
    "value",
    ["", "health", "http://h/x", "//h/x", "/a b", "/a\tb", "/%zz", "/a\u00e9", "/a<b>", "/\\x"],
)
def test_bad_url_paths(value: str) -> None:
    assert not hm.is_url_path(value)


@pytest.mark.parametrize("value", ["200", "200,202", "200 , 202,204", "200-299"])
def test_good_expected_codes(value: str) -> None:
    assert hm.is_expected_codes(value)


@pytest.mark.parametrize("value", ["", "20", "2000", "200-", "200-2000", "200;201", "2xx", "200,"])
def test_bad_expected_codes(value: str) -> None:
    assert not hm.is_expected_codes(value)


@pytest.mark.parametrize("value", ["example.com", "a", "x-1.example.org.", "1.2.3.4", "a" * 63])
def test_good_domain_names(value: str) -> None:
    assert hm.is_domain_name(value)


@pytest.mark.parametrize(
    "value", ["", "-a.com", "a-.com", "a..b", "a_b.com", "a" * 64, ("a" * 60 + ".") * 5, "a b"]
)
def test_bad_domain_names(value: str) -> None:
    assert not hm.is_domain_name(value)
