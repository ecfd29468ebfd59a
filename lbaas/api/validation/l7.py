"""L7 policy and rule rules that need no database: actions, redirects, positions, rules.

Policies. A policy's action and its redirect fields must agree, and Octavia lets a client
say either: sending a redirect field picks the action, sending an action requires its
field. ``sanitize_policy_args`` applies that to exactly the keys a request carried (so a
PUT changes only what it names), and ``settle_redirect`` then makes the stored result
consistent (a REJECT or pool redirect never keeps a URL, an HTTP code or a stale pool).

Rules. What a rule may compare depends on its type (Octavia's validity matrix); the
checks run on the merged rule on PUT, so an update cannot leave an invalid combination.
A REGEX value must compile with PCRE2 as HAProxy compiles it, and header and cookie names
follow the data plane's rule (``lbaas.render.haproxy.inputs``: one definition for both).

Positions. Policies of a listener are numbered 1..N in evaluation order; ``reorder``
computes the new order when one policy is inserted or moved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from lbaas.errors import InvalidInput
from lbaas.model.enums import L7CompareType, L7PolicyAction, L7RuleType
from lbaas.render.haproxy.inputs import FETCH_ARGUMENT, regex_error

MAX_RULES_PER_POLICY = 50
DEFAULT_REDIRECT_CODE = 302
REDIRECT_CODES = (301, 302, 303, 307, 308)

_REJECT = L7PolicyAction.REJECT
_TO_POOL = L7PolicyAction.REDIRECT_TO_POOL
_TO_URL = L7PolicyAction.REDIRECT_TO_URL
_PREFIX = L7PolicyAction.REDIRECT_PREFIX


def _bad_args(reason: str) -> NoReturn:
    raise InvalidInput(f"Invalid L7 Policy arguments: {reason}")


def _bad_action(action: object) -> NoReturn:
    raise InvalidInput(f"Invalid L7 Policy action specified: {action}")


def sanitize_policy_args(args: Mapping[str, object]) -> dict[str, object]:
    """Apply the action/redirect rules to the keys a request supplied.

    ``redirect_pool`` (a pool object of the graph create) counts like ``redirect_pool_id``.
    Returns the keys to store; an empty request is refused. The HTTP code default (302)
    is left to ``settle_redirect`` so that a PUT changing only the URL keeps the code.
    """
    out = dict(args)
    if "action" in out:
        action = out["action"]
        if action == _REJECT:
            for key in ("redirect_pool_id", "redirect_url", "redirect_prefix"):
                out[key] = None
            out["redirect_http_code"] = None
            out.pop("redirect_pool", None)
        elif action == _TO_URL:
            if not out.get("redirect_url"):
                _bad_args("redirect_url must not be None")
        elif action == _TO_POOL:
            if not (out.get("redirect_pool_id") or out.get("redirect_pool")):
                _bad_args("redirect_pool_id or redirect_pool must not be None")
        elif action == _PREFIX:
            if not out.get("redirect_prefix"):
                _bad_args("redirect_prefix must not be None")
        else:
            _bad_action(action)
    pool = out.get("redirect_pool_id") or out.get("redirect_pool")
    url, prefix = out.get("redirect_url"), out.get("redirect_prefix")
    if pool and (url or prefix):
        _bad_args(
            "Cannot specify redirect_pool_id and redirect_url or redirect_prefix at the same time"
        )
    if url and prefix:
        _bad_args("Cannot specify redirect_url and redirect_prefix at the same time")
    if pool:
        out.update(
            action=_TO_POOL, redirect_url=None, redirect_prefix=None, redirect_http_code=None
        )
    elif url or prefix:
        out.update(action=_TO_URL if url else _PREFIX, redirect_pool_id=None)
        out["redirect_prefix" if url else "redirect_url"] = None
        out.pop("redirect_pool", None)
    if not out:
        _bad_args("Invalid update options")
    return out


@dataclass(frozen=True)
class Redirect:
    """What a policy does with a matching request, as stored."""

    action: L7PolicyAction
    pool_id: str | None = None
    url: str | None = None
    prefix: str | None = None
    http_code: int | None = None


def settle_redirect(r: Redirect) -> Redirect:
    """The consistent stored form: only the action's own field, a code only for redirects."""
    if r.action is _REJECT:
        return Redirect(_REJECT)
    if r.action is _TO_POOL:
        if not r.pool_id:
            _bad_args("redirect_pool_id or redirect_pool must not be None")
        return Redirect(_TO_POOL, pool_id=r.pool_id)
    code = r.http_code or DEFAULT_REDIRECT_CODE
    if r.action is _TO_URL:
        if not r.url:
            _bad_args("redirect_url must not be None")
        return Redirect(_TO_URL, url=r.url, http_code=code)
    if not r.prefix:
        _bad_args("redirect_prefix must not be None")
    return Redirect(_PREFIX, prefix=r.prefix, http_code=code)


def reorder(ids: Sequence[str], moving: str, position: int | None) -> list[str]:
    """Evaluation order after putting ``moving`` at 1-based ``position`` (None/too big: last)."""
    rest = [i for i in ids if i != moving]
    index = len(rest) if position is None or position > len(rest) else max(position, 1) - 1
    return [*rest[:index], moving, *rest[index:]]


# -- rules ------------------------------------------------------------------------------

_HEADER_VALUE = re.compile(r"[\x21-\x7e]+")
_QUOTED_HEADER_VALUE = re.compile(r'"[\t\x20\x21\x23-\x7e]*"')
_COOKIE_VALUE = re.compile(r"[\x21\x23-\x3a\x3c-\x5b\x5d-\x7e]+")
_DN_FIELD = re.compile(r"[a-zA-Z][A-Za-z0-9-]*")
_DIGITS = re.compile(r"[0-9]+")

_ALL_COMPARE = frozenset(L7CompareType)
_COMPARE_TYPES: dict[L7RuleType, frozenset[L7CompareType]] = {
    L7RuleType.HOST_NAME: _ALL_COMPARE,
    L7RuleType.PATH: _ALL_COMPARE,
    L7RuleType.FILE_TYPE: frozenset({L7CompareType.EQUAL_TO, L7CompareType.REGEX}),
    L7RuleType.HEADER: _ALL_COMPARE,
    L7RuleType.COOKIE: _ALL_COMPARE,
    L7RuleType.SSL_CONN_HAS_CERT: frozenset({L7CompareType.EQUAL_TO}),
    L7RuleType.SSL_VERIFY_RESULT: frozenset({L7CompareType.EQUAL_TO}),
    L7RuleType.SSL_DN_FIELD: _ALL_COMPARE,
}
_KEYLESS = frozenset({L7RuleType.SSL_CONN_HAS_CERT, L7RuleType.SSL_VERIFY_RESULT})
_KEY_PATTERNS = {
    L7RuleType.HEADER: FETCH_ARGUMENT,
    L7RuleType.COOKIE: FETCH_ARGUMENT,
    L7RuleType.SSL_DN_FIELD: _DN_FIELD,
}


def _bad_rule(reason: str) -> NoReturn:
    raise InvalidInput(f"Error parsing L7Rule: Invalid L7 Rule: {reason}")


def _check_regex(value: str) -> None:
    error = regex_error(value)
    if error is not None:
        _bad_rule(f"Unable to parse regular expression: {error}")


def _check_value(rule_type: L7RuleType, compare: L7CompareType, value: str) -> None:
    if compare is L7CompareType.REGEX:
        _check_regex(value)
        return
    if rule_type is L7RuleType.COOKIE:
        if not _COOKIE_VALUE.fullmatch(value):
            _bad_rule("Invalid characters in value")
    elif rule_type is not L7RuleType.SSL_DN_FIELD and not (
        _HEADER_VALUE.fullmatch(value) or _QUOTED_HEADER_VALUE.fullmatch(value)
    ):
        _bad_rule("Invalid characters in value")


def validate_rule(
    rule_type: L7RuleType, compare: L7CompareType, key: str | None, value: str
) -> None:
    """Refuse a rule Octavia's validity matrix (§4.5) does not allow."""
    for name, text in (("key", key or ""), ("value", value)):
        if "\r" in text or "\n" in text:
            _bad_rule(f"Invalid characters in {name}")
    if rule_type in _KEYLESS:
        if key:
            _bad_rule(f'L7rule type {rule_type.value} does not use the "key" field.')
    elif rule_type in _KEY_PATTERNS:
        if not key:
            _bad_rule("L7 rule type requires a key")
        if not _KEY_PATTERNS[rule_type].fullmatch(key):
            _bad_rule("Invalid characters in key")
    if compare not in _COMPARE_TYPES[rule_type]:
        _bad_rule("invalid comparison type for rule type")
    if rule_type is L7RuleType.SSL_CONN_HAS_CERT:
        if value.lower() != "true":
            _bad_rule('L7rule type SSL_CONN_HAS_CERT only accepts the value "true".')
    elif rule_type is L7RuleType.SSL_VERIFY_RESULT:
        if not _DIGITS.fullmatch(value):
            _bad_rule("L7rule type SSL_VERIFY_RESULT needs a non-negative integer value.")
    else:
        _check_value(rule_type, compare, value)
