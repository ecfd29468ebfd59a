"""Kept policy decisions answer as oslo.policy does: every rule of Octavia's, for callers
of every kind, against their own project, another, and none; asked twice, so the second
answer comes from what was kept. An enforcer given a policy file keeps nothing; with an
empty file it applies the same defaults, so it is the reference here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lbaas.identity.enforcer import PolicyEnforcer
from lbaas.identity.rules import list_rules


def _creds(project: str | None, roles: list[str], **more: Any) -> dict[str, Any]:
    return {"project_id": project, "user_id": "u", "roles": roles, "service_roles": [],
            "system_scope": None, **more}  # fmt: skip


CALLERS = [
    _creds("p", ["member", "reader"]),
    _creds("p", ["reader"]),
    _creds("p", ["admin", "member", "reader"]),
    _creds("q", ["load-balancer_member"]),
    _creds(None, ["admin"], system_scope="all"),
    _creds("p", []),
]
TARGETS: list[dict[str, Any]] = [{}, {"project_id": "p"}, {"project_id": "q"}]


def test_kept_decisions_are_oslo_policys(tmp_path: Path) -> None:
    empty = tmp_path / "policy.yaml"
    empty.write_text("{}\n")
    for new_defaults in (False, True):
        kept = PolicyEnforcer(enforce_new_defaults=new_defaults)
        reference = PolicyEnforcer(enforce_new_defaults=new_defaults, policy_file=empty)
        for rule in [r.name for r in list_rules()]:
            for creds in CALLERS:
                for target in TARGETS:
                    expected = reference.allows(rule, target, creds)
                    assert kept.allows(rule, target, creds) == expected, (rule, creds, target)
                    assert kept.allows(rule, target, creds) == expected, (rule, creds, target)
