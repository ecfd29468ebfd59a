"""Every policy rule lbaas registers, for oslo.policy's tools.

The ``oslo.policy.policies`` entry point ``lbaas`` names this function, so
``oslopolicy-sample-generator --namespace lbaas`` prints a commented sample policy file
(and ``oslopolicy-checker``, ``oslopolicy-list-redundant`` work) with Octavia's names.
"""

from __future__ import annotations

from oslo_policy.policy import RuleDefault

from lbaas.identity import api_rules, base_rules


def list_rules() -> list[RuleDefault]:
    return [*base_rules.list_rules(), *api_rules.list_rules()]
