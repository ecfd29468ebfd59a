"""Octavia's building-block policy rules, under Octavia's names, for oslo.policy.

Each endpoint rule (``api_rules``) names one of these. Every building block has a new
default written with Keystone's default roles (``admin``, ``member``, ``reader``,
``service``) and, where Octavia had one, the older "advanced RBAC" rule with the
``load-balancer_*`` roles as its deprecated alternative: oslo.policy honours the two
together only while ``enforce_new_defaults`` is off, which is how Octavia behaves. An
operator's policy file may redefine any of them by name.
"""

from __future__ import annotations

from oslo_policy.policy import DeprecatedRule, RuleDefault

_SINCE = "2023.2"
_WHY = (
    "Octavia's policies honour Keystone's default roles (admin, member, reader) on "
    "project-scoped tokens; the load-balancer_* roles remain only while "
    "enforce_new_defaults is off."
)
_PROJECT = ["project"]

OWNER = "project_id:%(project_id)s"


def _rule(name: str, new: str, old: str | None, description: str) -> RuleDefault:
    deprecated = (
        None
        if old is None
        else DeprecatedRule(name, old, deprecated_reason=_WHY, deprecated_since=_SINCE)
    )
    return RuleDefault(
        name, new, description=description, deprecated_rule=deprecated, scope_types=_PROJECT
    )


def _composite(name: str, check: str, description: str) -> RuleDefault:
    return RuleDefault(name, check, description=description, scope_types=_PROJECT)


ROLE_RULES = [
    _rule(
        "context_is_admin",
        "role:admin",
        "role:admin or role:load-balancer_admin",
        "Who is an administrator of the whole service.",
    ),
    _composite("load-balancer:owner", OWNER, "The caller's project owns the target."),
    _rule(
        "load-balancer:admin",
        "is_admin:True or role:admin",
        "is_admin:True or role:admin or role:load-balancer_admin",
        "Administrators: everything in every project.",
    ),
    _rule(
        "load-balancer:global_observer",
        "role:admin",
        "role:load-balancer_global_observer",
        "Readers of every project's objects.",
    ),
    _rule(
        "load-balancer:member_and_owner",
        "role:member and rule:load-balancer:owner",
        "role:load-balancer_member and rule:load-balancer:owner",
        "Readers and writers of their own project's objects.",
    ),
    _rule(
        "load-balancer:observer_and_owner",
        "role:reader and rule:load-balancer:owner",
        "role:load-balancer_observer and rule:load-balancer:owner",
        "Readers of their own project's objects.",
    ),
    _rule(
        "load-balancer:quota-admin",
        "role:admin",
        "role:load-balancer_quota_admin",
        "Readers and writers of every project's quotas.",
    ),
    _composite("service", "role:service", "Other services (telemetry reads members)."),
]

_READ = (
    "rule:load-balancer:observer_and_owner or rule:load-balancer:global_observer or "
    "rule:load-balancer:member_and_owner or rule:load-balancer:admin"
)

ACCESS_RULES = [
    _composite("load-balancer:read", _READ, "Read the target project's objects."),
    _composite(
        "load-balancer:read-global",
        "rule:load-balancer:global_observer or rule:load-balancer:admin",
        "Read every project's objects (lists span projects).",
    ),
    _composite(
        "load-balancer:write",
        "rule:load-balancer:member_and_owner or rule:load-balancer:admin",
        "Create, change and delete the target project's objects.",
    ),
    _composite(
        "load-balancer:read-quota",
        f"{_READ} or rule:load-balancer:quota-admin",
        "Read the target project's quota.",
    ),
    _composite(
        "load-balancer:read-quota-global",
        "rule:load-balancer:global_observer or rule:load-balancer:quota-admin or "
        "rule:load-balancer:admin",
        "Read every project's quota.",
    ),
    _composite(
        "load-balancer:write-quota",
        "rule:load-balancer:quota-admin or rule:load-balancer:admin",
        "Set and reset any project's quota.",
    ),
]


def list_rules() -> list[RuleDefault]:
    return [*ROLE_RULES, *ACCESS_RULES]
