"""L7 policies and rules as HAProxy ACLs and request rules of an HTTP frontend.

Each enabled rule becomes one named ACL (``rule_<id>``); a policy's condition is its
enabled rules ANDed, each negated when the rule is inverted. A policy is rendered only when
it is enabled and has at least one enabled rule; an empty condition would match everything.

Policies are evaluated the way Octavia documents it for its HAProxy amphorae: REJECT
policies first, then REDIRECT_TO_URL and REDIRECT_PREFIX, then REDIRECT_TO_POOL, each group
in position order, the first match winning. This is also the order HAProxy itself runs
``http-request deny``, ``redirect`` and ``use_backend`` in, so the file reads in evaluation
order. Redirects use the plain ``redirect`` directive, whose target is taken literally
(the ``http-request redirect`` form would read ``%`` in a tenant's URL as a log-format
variable). REJECT answers 403.

Rule types map to sample fetches: HOST_NAME ``req.hdr(host)`` (case-insensitive), PATH
``path``, FILE_TYPE ``path`` (EQUAL_TO means "the path ends in ``.<value>``", REGEX is
matched against the whole path), HEADER ``req.fhdr(<key>)`` (the full value, commas
included; a value wrapped in double quotes is matched without them, as Octavia's API
documents for header values with spaces), COOKIE ``req.cook(<key>)``, SSL_CONN_HAS_CERT
``ssl_c_used``, SSL_VERIFY_RESULT ``ssl_c_verify``, SSL_DN_FIELD ``ssl_c_s_dn(<key>)``. The
three SSL types only mean something on TERMINATED_HTTPS listeners (with client
authentication OPTIONAL or MANDATORY, where HAProxy asks for a client certificate); on an
HTTP listener they are valid and never match. Compare types map to
HAProxy's match methods (``reg``, ``beg``, ``end``, ``sub``, ``str``), and the value is
always one quoted pattern after ``--``, so a value can be neither a flag nor two patterns.
A policy whose target pool is not in the graph is skipped: there is nothing to send to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import assert_never

from lbaas.errors import PermanentError
from lbaas.model.enums import L7CompareType, L7PolicyAction, L7RuleType
from lbaas.model.graph import L7Policy, L7Rule, Listener, LoadBalancer
from lbaas.render.haproxy.inputs import regex_error
from lbaas.render.haproxy.names import backend_name, rule_acl_name
from lbaas.render.haproxy.quoting import fetch_argument
from lbaas.render.haproxy.unsupported import refusal
from lbaas.render.haproxy.view import (
    Acl,
    AclTerm,
    BackendSwitch,
    DenyRule,
    RedirectKind,
    RedirectRule,
)

REJECT_STATUS = 403
DEFAULT_REDIRECT_CODE = 302
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})

_MATCH_METHOD = {
    L7CompareType.REGEX: "reg",
    L7CompareType.STARTS_WITH: "beg",
    L7CompareType.ENDS_WITH: "end",
    L7CompareType.CONTAINS: "sub",
    L7CompareType.EQUAL_TO: "str",
}
_DN_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


@dataclass(frozen=True)
class L7Routing:
    """What a listener's L7 policies add to its frontend."""

    acls: tuple[Acl, ...] = ()
    denies: tuple[DenyRule, ...] = ()
    redirects: tuple[RedirectRule, ...] = ()
    switches: tuple[BackendSwitch, ...] = ()


def l7_routing_of(listener: Listener, lb: LoadBalancer) -> L7Routing:
    """ACLs and rules for the listener's enabled policies, in evaluation order."""
    acls: list[Acl] = []
    denies: list[DenyRule] = []
    redirects: list[RedirectRule] = []
    switches: list[BackendSwitch] = []
    for policy in sorted(listener.l7policies, key=lambda p: (p.position, p.id)):
        rules = [rule for rule in policy.rules if rule.admin_state_up]
        if not policy.admin_state_up or not rules:
            continue
        condition = tuple(_term(rule) for rule in rules)
        action = policy.action
        if action is L7PolicyAction.REJECT:
            denies.append(DenyRule(REJECT_STATUS, condition))
        elif action is L7PolicyAction.REDIRECT_TO_URL:
            target = _required(policy.redirect_url, "redirect_url", policy)
            redirects.append(RedirectRule(RedirectKind.LOCATION, target, _code(policy), condition))
        elif action is L7PolicyAction.REDIRECT_PREFIX:
            target = _required(policy.redirect_prefix, "redirect_prefix", policy)
            redirects.append(RedirectRule(RedirectKind.PREFIX, target, _code(policy), condition))
        elif action is L7PolicyAction.REDIRECT_TO_POOL:
            pool_id = policy.redirect_pool_id
            if pool_id is None or lb.pool(pool_id) is None:
                continue
            switches.append(BackendSwitch(backend_name(pool_id), condition))
        else:
            assert_never(action)
        acls.extend(acl_of(rule) for rule in rules)
    return L7Routing(tuple(acls), tuple(denies), tuple(redirects), tuple(switches))


def acl_of(rule: L7Rule) -> Acl:
    """The ACL that is true when the rule's comparison matches (before ``invert``)."""
    name = rule_acl_name(rule.id)
    method = ("-m", _MATCH_METHOD[rule.compare_type])
    if rule.compare_type is L7CompareType.REGEX:
        error = regex_error(rule.value, caseless=rule.type is L7RuleType.HOST_NAME)
        if error is not None:
            raise refusal(f"The regular expression of L7 rule {rule.id} is invalid: {error}")
    kind = rule.type
    if kind is L7RuleType.HOST_NAME:
        return Acl(name, "req.hdr(host)", ("-i", *method), rule.value)
    if kind is L7RuleType.PATH:
        return Acl(name, "path", method, rule.value)
    if kind is L7RuleType.FILE_TYPE:
        if rule.compare_type is L7CompareType.EQUAL_TO:
            return Acl(name, "path", ("-m", "end"), "." + rule.value.removeprefix("."))
        return Acl(name, "path", method, rule.value)
    if kind is L7RuleType.HEADER:
        header = fetch_argument(_key(rule), "header name")
        return Acl(name, f"req.fhdr({header})", method, _unwrapped(rule.value))
    if kind is L7RuleType.COOKIE:
        cookie = fetch_argument(_key(rule), "cookie name")
        return Acl(name, f"req.cook({cookie})", method, rule.value)
    if kind is L7RuleType.SSL_CONN_HAS_CERT:
        return Acl(name, "ssl_c_used")
    if kind is L7RuleType.SSL_VERIFY_RESULT:
        return Acl(name, "ssl_c_verify", method, rule.value.strip())
    if kind is L7RuleType.SSL_DN_FIELD:
        field = _key(rule)
        if _DN_FIELD.fullmatch(field) is None:
            raise refusal(f"The DN field name {field!r} is not valid.")
        return Acl(name, f"ssl_c_s_dn({field})", method, rule.value)
    assert_never(kind)


def _term(rule: L7Rule) -> AclTerm:
    negated = rule.invert
    if rule.type is L7RuleType.SSL_CONN_HAS_CERT and rule.value.strip().lower() != "true":
        negated = not negated
    return AclTerm(rule_acl_name(rule.id), negated)


def _key(rule: L7Rule) -> str:
    if not rule.key:
        raise refusal(f"L7 rules of type {rule.type} need a key.")
    return rule.key


def _unwrapped(value: str) -> str:
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        return value[1:-1]
    return value


def _code(policy: L7Policy) -> int:
    code = policy.redirect_http_code or DEFAULT_REDIRECT_CODE
    if code not in REDIRECT_CODES:
        raise refusal(f"Redirect code {code} is not supported.")
    return code


def _required(value: str | None, field: str, policy: L7Policy) -> str:
    if not value:
        raise PermanentError(
            f"L7 policy {policy.id} has no {field}.", f"{policy.action} policy without {field}"
        )
    return value
