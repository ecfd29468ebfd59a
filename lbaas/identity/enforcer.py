"""oslo.policy's enforcer, set up from lbaas's own settings instead of oslo.config files.

lbaas reads no oslo.config files, so the enforcer gets a private ``ConfigOpts`` that holds
only the two settings lbaas passes on: ``enforce_new_defaults`` and the operator's policy
file. Without a policy file it never searches for one (oslo.policy would otherwise look
for ``policy.yaml`` and ``policy.d`` in the usual configuration directories), so what an
unconfigured lbaas allows never depends on what files lie around. A policy file is read
at start (a broken one stops the start with its error) and re-read when it changes, as
oslo.policy does. Scope is always enforced by oslo.policy 6: every rule is
project-scoped, so a system-scoped token may do nothing, as with Octavia.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from oslo_config import cfg
from oslo_policy.policy import Enforcer

from lbaas.errors import ConfigError
from lbaas.identity.rules import list_rules

#: Where oslo.policy is told the file is when the operator names none: it never exists.
_NO_FILE = "/nonexistent/lbaas-has-no-policy-file.yaml"
#: Decisions kept (callers x rules x target projects seen lately); all dropped when full.
DECISIONS_KEPT = 4096


class PolicyEnforcer:
    """Octavia's rules, with the operator's file over them, applied to a caller."""

    def __init__(self, *, enforce_new_defaults: bool, policy_file: Path | None = None) -> None:
        if policy_file is not None and not policy_file.is_file():
            raise ConfigError(f"api.policy_file: {policy_file} is not a readable file")
        conf = cfg.ConfigOpts()
        conf([], project="lbaas", default_config_files=[], default_config_dirs=[])
        where = str(policy_file.absolute()) if policy_file is not None else _NO_FILE
        self._enforcer = Enforcer(conf, policy_file=where)
        conf.set_override("policy_dirs", [], group="oslo_policy")
        conf.set_override("enforce_new_defaults", enforce_new_defaults, group="oslo_policy")
        self._enforcer.register_defaults(list_rules())
        self._enforcer.suppress_default_change_warnings = True
        try:
            self._enforcer.load_rules()
        except Exception as exc:  # noqa: BLE001 - oslo.policy's parse errors share no base
            raise ConfigError(f"api.policy_file: {policy_file}: {exc}") from exc
        # Octavia's rules are functions of the caller and the target alone, so without a
        # policy file a decision once made is kept: oslo.policy spends ~0.4 ms on each
        # (it looks up every check's argument list), a fifth of a show's CPU (issue 34).
        # A policy file may change, or hold ``http:`` checks answered elsewhere: not kept.
        self._decisions: dict[Hashable, bool] | None = {} if policy_file is None else None

    def allows(self, rule: str, target: Mapping[str, Any], creds: Mapping[str, Any]) -> bool:
        key = None if self._decisions is None else _key(rule, target, creds)
        if key is None or self._decisions is None:
            return self._decide(rule, target, creds)
        found = self._decisions.get(key)
        if found is None:
            found = self._decide(rule, target, creds)
            if len(self._decisions) >= DECISIONS_KEPT:
                self._decisions.clear()
            self._decisions[key] = found
        return found

    def _decide(self, rule: str, target: Mapping[str, Any], creds: Mapping[str, Any]) -> bool:
        return bool(self._enforcer.authorize(rule, dict(target), dict(creds)))


def _key(rule: str, target: Mapping[str, Any], creds: Mapping[str, Any]) -> Hashable | None:
    """Everything a decision depends on, hashable; None if some value cannot be."""
    try:
        key = (rule, _frozen(target), _frozen(creds))
        hash(key)
    except TypeError:
        return None
    return key


def _frozen(values: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items()))
