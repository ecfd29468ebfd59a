"""The emitter's own rules: units, section layout, quoting of every foreign string."""

from __future__ import annotations

import pytest

from lbaas.render.haproxy.emit import duration, emit_config
from lbaas.render.haproxy.view import (
    Acl,
    AclTerm,
    Backend,
    Balance,
    DenyRule,
    Frontend,
    GlobalSection,
    HaproxyConfig,
    HealthCheck,
    HttpCheck,
    Mode,
    Server,
)


@pytest.mark.parametrize(
    ("ms", "text"),
    [(1, "1ms"), (1500, "1500ms"), (5000, "5s"), (90000, "90s"), (120000, "2m"), (0, "0s")],
)
def test_duration_uses_the_largest_whole_unit(ms: int, text: str) -> None:
    assert duration(ms) == text


def _config(frontend: Frontend | None = None, backend: Backend | None = None) -> str:
    return emit_config(
        HaproxyConfig(
            load_balancer_id="lb-1",
            global_section=GlobalSection(100, "/s", "/st"),
            frontends=() if frontend is None else (frontend,),
            backends=() if backend is None else (backend,),
        )
    )


def test_sections_are_separated_and_indented() -> None:
    text = _config()
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert "\nglobal\n    maxconn 100\n" in text
    assert "\n\ndefaults\n" in text


def test_acl_patterns_are_quoted_after_double_dash() -> None:
    frontend = Frontend(
        name="fe_x",
        mode=Mode.HTTP,
        bind_address="127.0.0.1",
        port=80,
        enabled=True,
        maxconn=1,
        timeout_client_ms=1000,
        acls=(Acl("rule_a", "path", ("-m", "beg"), 'a "b"'), Acl("rule_b", "ssl_c_used")),
        denies=(DenyRule(403, (AclTerm("rule_a"), AclTerm("rule_b", negated=True))),),
    )
    text = _config(frontend)
    assert '    acl rule_a path -m beg -- "a \\"b\\""\n' in text
    assert "    acl rule_b ssl_c_used\n" in text
    assert "    http-request deny deny_status 403 if rule_a !rule_b\n" in text


def test_check_host_is_quoted_and_safe_for_log_format() -> None:
    check = HealthCheck(
        interval_ms=5000,
        timeout_ms=None,
        rise=1,
        fall=1,
        http=HttpCheck("GET", "/a b", "HTTP/1.1", "h%st", "200"),
    )
    backend = Backend(
        name="be_x",
        mode=Mode.HTTP,
        enabled=True,
        balance=Balance.ROUND_ROBIN,
        consistent_hashing=False,
        timeout_connect_ms=1000,
        timeout_server_ms=1000,
        health_check=check,
        servers=(Server("srv_a", "2001:db8::1", 80, 1, checked=True, check_address="::2"),),
    )
    text = _config(backend=backend)
    assert 'http-check send meth GET uri "/a b" ver HTTP/1.1 hdr Host "h%%st"' in text
    assert "server srv_a [2001:db8::1]:80 weight 1 check inter 5s fall 1 rise 1 addr [::2]" in text
    assert "timeout check" not in text
