"""The pure L7 rules: action/redirect sanitising, settling, positions and the rule matrix."""

from __future__ import annotations

import pytest

from lbaas.api.validation.l7 import (
    Redirect,
    reorder,
    sanitize_policy_args,
    settle_redirect,
    validate_rule,
)
from lbaas.errors import InvalidInput
from lbaas.model.enums import L7CompareType as C
from lbaas.model.enums import L7PolicyAction as A
from lbaas.model.enums import L7RuleType as T

URL = "http://example.com/"
POOL = "11111111-1111-4111-8111-111111111111"


# -- sanitize_policy_args -------------------------------------------------------------------


def test_reject_drops_every_redirect_field() -> None:
    out = sanitize_policy_args(
        {"action": A.REJECT, "redirect_url": URL, "redirect_pool": POOL, "redirect_http_code": 301}
    )
    assert out == {
        "action": A.REJECT,
        "redirect_url": None,
        "redirect_pool_id": None,
        "redirect_prefix": None,
        "redirect_http_code": None,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"action": A.REDIRECT_TO_URL}, "redirect_url must not be None"),
        ({"action": A.REDIRECT_TO_URL, "redirect_url": ""}, "redirect_url must not be None"),
        ({"action": A.REDIRECT_PREFIX}, "redirect_prefix must not be None"),
        ({"action": A.REDIRECT_TO_POOL}, "redirect_pool_id or redirect_pool must not be None"),
        ({"action": None}, "Invalid L7 Policy action specified: None"),
        ({"action": "SOMETHING"}, "Invalid L7 Policy action specified: SOMETHING"),
        (
            {"redirect_pool_id": POOL, "redirect_prefix": URL},
            "Cannot specify redirect_pool_id and redirect_url or redirect_prefix",
        ),
        (
            {"redirect_pool": POOL, "redirect_url": URL},
            "Cannot specify redirect_pool_id and redirect_url or redirect_prefix",
        ),
        ({"redirect_url": URL, "redirect_prefix": URL}, "redirect_url and redirect_prefix"),
        ({}, "Invalid L7 Policy arguments: Invalid update options"),
    ],
)
def test_inconsistent_arguments(args: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        sanitize_policy_args(args)


def test_a_redirect_field_picks_the_action() -> None:
    assert sanitize_policy_args({"redirect_pool_id": POOL, "redirect_http_code": 301}) == {
        "action": A.REDIRECT_TO_POOL,
        "redirect_pool_id": POOL,
        "redirect_url": None,
        "redirect_prefix": None,
        "redirect_http_code": None,
    }
    assert sanitize_policy_args({"redirect_url": URL}) == {
        "action": A.REDIRECT_TO_URL,
        "redirect_url": URL,
        "redirect_pool_id": None,
        "redirect_prefix": None,
    }
    out = sanitize_policy_args({"redirect_prefix": URL, "redirect_http_code": 308})
    assert out["action"] is A.REDIRECT_PREFIX and out["redirect_http_code"] == 308
    assert out["redirect_url"] is None


def test_unrelated_keys_pass_through() -> None:
    assert sanitize_policy_args({"name": "x", "position": 2}) == {"name": "x", "position": 2}
    assert sanitize_policy_args({"redirect_url": None}) == {"redirect_url": None}


# -- settle_redirect --------------------------------------------------------------------------


def test_settle_keeps_only_the_actions_field() -> None:
    everything = Redirect(A.REJECT, pool_id=POOL, url=URL, prefix=URL, http_code=301)
    assert settle_redirect(everything) == Redirect(A.REJECT)
    assert settle_redirect(Redirect(A.REDIRECT_TO_POOL, pool_id=POOL, http_code=301)) == Redirect(
        A.REDIRECT_TO_POOL, pool_id=POOL
    )
    assert settle_redirect(Redirect(A.REDIRECT_TO_URL, url=URL)) == Redirect(
        A.REDIRECT_TO_URL, url=URL, http_code=302
    )
    assert settle_redirect(Redirect(A.REDIRECT_PREFIX, prefix=URL, http_code=307)) == Redirect(
        A.REDIRECT_PREFIX, prefix=URL, http_code=307
    )


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (A.REDIRECT_TO_URL, "redirect_url must not be None"),
        (A.REDIRECT_PREFIX, "redirect_prefix must not be None"),
        (A.REDIRECT_TO_POOL, "redirect_pool_id or redirect_pool must not be None"),
    ],
)
def test_settle_needs_the_actions_field(action: A, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        settle_redirect(Redirect(action))


# -- reorder ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "moving", "position", "expected"),
    [
        (["a", "b"], "n", None, ["a", "b", "n"]),
        (["a", "b"], "n", 1, ["n", "a", "b"]),
        (["a", "b"], "n", 2, ["a", "n", "b"]),
        (["a", "b"], "n", 3, ["a", "b", "n"]),
        (["a", "b"], "n", 99, ["a", "b", "n"]),
        (["a", "b", "c"], "c", 1, ["c", "a", "b"]),
        (["a", "b", "c"], "a", 3, ["b", "c", "a"]),
        (["a", "b", "c"], "a", 50, ["b", "c", "a"]),
        (["a", "b", "c"], "b", 2, ["a", "b", "c"]),
        ([], "n", 5, ["n"]),
    ],
)
def test_reorder(ids: list[str], moving: str, position: int | None, expected: list[str]) -> None:
    assert reorder(ids, moving, position) == expected


# -- validate_rule ------------------------------------------------------------------------------

VALID = [
    (T.HOST_NAME, C.EQUAL_TO, None, "www.example.com"),
    (T.HOST_NAME, C.ENDS_WITH, "ignored", ".example.com"),
    (T.PATH, C.STARTS_WITH, None, "/api/v1?x=1&y=%20"),
    (T.PATH, C.REGEX, None, r"^/(a|b)/\d+$"),
    (T.PATH, C.CONTAINS, None, '"quoted value with spaces"'),
    (T.FILE_TYPE, C.EQUAL_TO, None, "jpg"),
    (T.FILE_TYPE, C.REGEX, None, "jpe?g"),
    (T.HEADER, C.EQUAL_TO, "X-Forwarded-Proto", "https"),
    (T.HEADER, C.CONTAINS, "User-Agent", '"Mozilla 5.0"'),
    (T.HEADER, C.REGEX, "Host", r"^.*\.example\.com$"),
    (T.COOKIE, C.EQUAL_TO, "session_id", "abc,def"),
    (T.COOKIE, C.REGEX, "s", "a b"),
    (T.SSL_CONN_HAS_CERT, C.EQUAL_TO, None, "True"),
    (T.SSL_CONN_HAS_CERT, C.EQUAL_TO, "", "true"),
    (T.SSL_VERIFY_RESULT, C.EQUAL_TO, None, "0"),
    (T.SSL_VERIFY_RESULT, C.EQUAL_TO, None, "21"),
    (T.SSL_DN_FIELD, C.EQUAL_TO, "CN", "web server"),
    (T.SSL_DN_FIELD, C.REGEX, "emailAddress", ".*@example.com"),
    (T.SSL_DN_FIELD, C.STARTS_WITH, "x-500-unique", "a"),
]


@pytest.mark.parametrize(("rule_type", "compare", "key", "value"), VALID)
def test_valid_rules(rule_type: T, compare: C, key: str | None, value: str) -> None:
    validate_rule(rule_type, compare, key, value)


INVALID = [
    (T.HEADER, C.EQUAL_TO, None, "v", "L7 rule type requires a key"),
    (T.COOKIE, C.EQUAL_TO, "", "v", "L7 rule type requires a key"),
    (T.SSL_DN_FIELD, C.EQUAL_TO, None, "v", "L7 rule type requires a key"),
    (T.HEADER, C.EQUAL_TO, "X Bad", "v", "Invalid characters in key"),
    (T.HEADER, C.EQUAL_TO, "X:Bad", "v", "Invalid characters in key"),
    (T.COOKIE, C.EQUAL_TO, "a=b", "v", "Invalid characters in key"),
    (T.SSL_DN_FIELD, C.EQUAL_TO, "1CN", "v", "Invalid characters in key"),
    (T.SSL_DN_FIELD, C.EQUAL_TO, "C_N", "v", "Invalid characters in key"),
    (T.FILE_TYPE, C.STARTS_WITH, None, "jpg", "invalid comparison type for rule type"),
    (T.FILE_TYPE, C.CONTAINS, None, "jpg", "invalid comparison type for rule type"),
    (T.SSL_CONN_HAS_CERT, C.REGEX, None, "true", "invalid comparison type for rule type"),
    (T.SSL_VERIFY_RESULT, C.CONTAINS, None, "1", "invalid comparison type for rule type"),
    (
        T.SSL_CONN_HAS_CERT,
        C.EQUAL_TO,
        "k",
        "true",
        'L7rule type SSL_CONN_HAS_CERT does not use the "key" field.',
    ),
    (
        T.SSL_VERIFY_RESULT,
        C.EQUAL_TO,
        "k",
        "0",
        'L7rule type SSL_VERIFY_RESULT does not use the "key" field.',
    ),
    (T.SSL_CONN_HAS_CERT, C.EQUAL_TO, None, "yes", 'only accepts the value "true"'),
    (T.SSL_VERIFY_RESULT, C.EQUAL_TO, None, "-1", "non-negative integer"),
    (T.SSL_VERIFY_RESULT, C.EQUAL_TO, None, "x", "non-negative integer"),
    (T.PATH, C.REGEX, None, "(open", "Unable to parse regular expression: "),
    (T.HEADER, C.REGEX, "X-A", "[z-a]", "Unable to parse regular expression: "),
    (T.SSL_DN_FIELD, C.REGEX, "CN", "*x", "Unable to parse regular expression: "),
    (T.PATH, C.EQUAL_TO, None, "/a b", "Invalid characters in value"),
    (T.HOST_NAME, C.EQUAL_TO, None, "caf\u00e9", "Invalid characters in value"),
    (T.HEADER, C.EQUAL_TO, "X-A", '"open quote', "Invalid characters in value"),
    (T.COOKIE, C.EQUAL_TO, "c", 'a"b', "Invalid characters in value"),
    (T.COOKIE, C.EQUAL_TO, "c", "a;b", "Invalid characters in value"),
    (T.COOKIE, C.EQUAL_TO, "c", "a\\b", "Invalid characters in value"),
    (T.COOKIE, C.EQUAL_TO, "c", "a b", "Invalid characters in value"),
    (T.PATH, C.REGEX, None, "/a\nb", "Invalid characters in value"),
    (T.SSL_DN_FIELD, C.EQUAL_TO, "CN", "a\rb", "Invalid characters in value"),
    (T.HEADER, C.EQUAL_TO, "X-A\n", "v", "Invalid characters in key"),
]


@pytest.mark.parametrize(("rule_type", "compare", "key", "value", "reason"), INVALID)
def test_invalid_rules(rule_type: T, compare: C, key: str | None, value: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_rule(rule_type, compare, key, value)
    message = caught.value.message
    assert message.startswith("Error parsing L7Rule: Invalid L7 Rule: "), message
    assert reason in message


def test_every_type_and_compare_combination_is_decided() -> None:
    """No combination raises anything but InvalidInput (no KeyError, no crash)."""
    for rule_type in T:
        for compare in C:
            try:
                validate_rule(rule_type, compare, "K", "1")
            except InvalidInput:
                pass
