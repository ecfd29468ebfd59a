"""L7 policies: evaluation order, which policies count, and how each rule becomes an ACL."""

from __future__ import annotations

import pytest

from lbaas.errors import PermanentError
from lbaas.model.enums import L7CompareType as Compare
from lbaas.model.enums import L7PolicyAction as Action
from lbaas.model.enums import L7RuleType as Rule
from lbaas.model.graph import L7Policy
from lbaas.render.haproxy.l7 import L7Routing, acl_of, l7_routing_of
from lbaas.render.haproxy.view import Acl, AclTerm, RedirectKind, RedirectRule
from tests.support.graphs import listener, load_balancer, policy, pool, rule, uid

PATH = rule("path", Rule.PATH, Compare.STARTS_WITH, "/a")


def _routing(*policies: L7Policy) -> L7Routing:
    lst = listener("l", policies=policies)
    return l7_routing_of(lst, load_balancer([lst], [pool("p1"), pool("p2")]))


def _acl(label: str) -> str:
    return f"rule_{uid('rule', label)}"


def test_switches_follow_position_not_list_order() -> None:
    second = policy("second", Action.REDIRECT_TO_POOL, 2, [PATH], redirect_pool="p2")
    first = policy("first", Action.REDIRECT_TO_POOL, 1, [PATH], redirect_pool="p1")
    routing = _routing(second, first)
    assert [s.backend for s in routing.switches] == [
        f"be_{uid('pool', 'p1')}",
        f"be_{uid('pool', 'p2')}",
    ]


def test_actions_are_grouped_in_haproxy_evaluation_order() -> None:
    routing = _routing(
        policy("pool", Action.REDIRECT_TO_POOL, 1, [PATH], redirect_pool="p1"),
        policy("url", Action.REDIRECT_TO_URL, 2, [PATH], redirect_url="http://x/"),
        policy("reject", Action.REJECT, 3, [PATH]),
    )
    assert len(routing.denies) == len(routing.redirects) == len(routing.switches) == 1
    assert routing.denies[0].status == 403


def test_rules_are_anded_and_inverted_rules_negated() -> None:
    rules = [
        rule("r1", Rule.PATH, Compare.STARTS_WITH, "/a"),
        rule("r2", Rule.HOST_NAME, Compare.EQUAL_TO, "a.example", invert=True),
    ]
    routing = _routing(policy("p", Action.REJECT, 1, rules))
    assert routing.denies[0].condition == (AclTerm(_acl("r1")), AclTerm(_acl("r2"), negated=True))
    assert [acl.name for acl in routing.acls] == [_acl("r1"), _acl("r2")]


def test_disabled_policies_rules_and_empty_policies_are_not_rendered() -> None:
    routing = _routing(
        policy(
            "off", Action.REJECT, 1, [rule("a", Rule.PATH, Compare.EQUAL_TO, "/a")], admin=False
        ),
        policy("empty", Action.REJECT, 2, []),
        policy(
            "all-off", Action.REJECT, 3, [rule("b", Rule.PATH, Compare.EQUAL_TO, "/b", admin=False)]
        ),
        policy(
            "mixed",
            Action.REJECT,
            4,
            [
                rule("c", Rule.PATH, Compare.EQUAL_TO, "/c"),
                rule("d", Rule.PATH, Compare.EQUAL_TO, "/d", admin=False),
            ],
        ),
    )
    assert [d.condition for d in routing.denies] == [(AclTerm(_acl("c")),)]
    assert [acl.name for acl in routing.acls] == [_acl("c")]


def test_policy_to_a_pool_missing_from_the_graph_is_skipped() -> None:
    routing = _routing(policy("gone", Action.REDIRECT_TO_POOL, 1, [PATH], redirect_pool="gone"))
    assert routing == L7Routing()


def test_redirects_carry_target_and_code() -> None:
    routing = _routing(
        policy(
            "url",
            Action.REDIRECT_TO_URL,
            1,
            [PATH],
            redirect_url="https://x/",
            redirect_http_code=308,
        ),
        policy("prefix", Action.REDIRECT_PREFIX, 2, [PATH], redirect_prefix="https://y"),
    )
    condition = (AclTerm(_acl("path")),)
    assert routing.redirects == (
        RedirectRule(RedirectKind.LOCATION, "https://x/", 308, condition),
        RedirectRule(RedirectKind.PREFIX, "https://y", 302, condition),
    )


def test_unsupported_redirect_code_and_missing_url_are_refused() -> None:
    with pytest.raises(PermanentError):
        _routing(
            policy(
                "u",
                Action.REDIRECT_TO_URL,
                1,
                [PATH],
                redirect_url="http://x",
                redirect_http_code=305,
            )
        )
    with pytest.raises(PermanentError):
        _routing(policy("u", Action.REDIRECT_TO_URL, 1, [PATH]))


@pytest.mark.parametrize(
    ("compare", "method"),
    [
        (Compare.REGEX, "reg"),
        (Compare.STARTS_WITH, "beg"),
        (Compare.ENDS_WITH, "end"),
        (Compare.CONTAINS, "sub"),
        (Compare.EQUAL_TO, "str"),
    ],
)
def test_compare_types_map_to_match_methods(compare: Compare, method: str) -> None:
    acl = acl_of(rule("r", Rule.PATH, compare, "/x"))
    assert acl == Acl(_acl("r"), "path", ("-m", method), "/x")


@pytest.mark.parametrize(
    ("kind", "key", "value", "fetch", "flags", "pattern"),
    [
        (Rule.HOST_NAME, None, "Example.COM", "req.hdr(host)", ("-i", "-m", "str"), "Example.COM"),
        (Rule.PATH, None, "/x", "path", ("-m", "str"), "/x"),
        (Rule.FILE_TYPE, None, "jpg", "path", ("-m", "end"), ".jpg"),
        (Rule.FILE_TYPE, None, ".tar.gz", "path", ("-m", "end"), ".tar.gz"),
        (Rule.HEADER, "X-Env", "prod", "req.fhdr(X-Env)", ("-m", "str"), "prod"),
        (Rule.HEADER, "X-Env", '"two words"', "req.fhdr(X-Env)", ("-m", "str"), "two words"),
        (Rule.COOKIE, "beta", "1", "req.cook(beta)", ("-m", "str"), "1"),
        (Rule.SSL_VERIFY_RESULT, None, "0", "ssl_c_verify", ("-m", "str"), "0"),
        (Rule.SSL_DN_FIELD, "CN", "svc", "ssl_c_s_dn(CN)", ("-m", "str"), "svc"),
    ],
)
def test_rule_types_map_to_fetches(
    kind: Rule, key: str | None, value: str, fetch: str, flags: tuple[str, ...], pattern: str
) -> None:
    assert acl_of(rule("r", kind, Compare.EQUAL_TO, value, key=key)) == Acl(
        _acl("r"), fetch, flags, pattern
    )


def test_file_type_regex_is_matched_against_the_path() -> None:
    acl = acl_of(rule("r", Rule.FILE_TYPE, Compare.REGEX, r"\.png$"))
    assert (acl.fetch, acl.flags, acl.pattern) == ("path", ("-m", "reg"), r"\.png$")


def test_client_certificate_presence_is_a_boolean_acl() -> None:
    has_cert = rule("r", Rule.SSL_CONN_HAS_CERT, Compare.EQUAL_TO, "TRUE")
    assert acl_of(has_cert) == Acl(_acl("r"), "ssl_c_used")
    routing = _routing(
        policy("yes", Action.REJECT, 1, [has_cert]),
        policy(
            "no", Action.REJECT, 2, [rule("n", Rule.SSL_CONN_HAS_CERT, Compare.EQUAL_TO, "false")]
        ),
    )
    assert [d.condition[0].negated for d in routing.denies] == [False, True]


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        (Rule.HEADER, None),
        (Rule.COOKIE, ""),
        (Rule.HEADER, "X Bad"),
        (Rule.COOKIE, "a)b"),
        (Rule.SSL_DN_FIELD, "1CN"),
        (Rule.SSL_DN_FIELD, "CN)"),
    ],
)
def test_missing_or_unsafe_keys_are_refused(kind: Rule, key: str | None) -> None:
    with pytest.raises(PermanentError):
        acl_of(rule("r", kind, Compare.EQUAL_TO, "v", key=key))
