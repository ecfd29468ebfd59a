"""The seam between load balancers and the registry that holds security groups.

A load balancer's ``vip_sg_ids`` names groups; the API must know they exist in the
caller's project and can be enforced, and whoever changes a group's rules must have the
load balancers that use it converged again. ``SecurityGroupRegistry`` is what the
load-balancer side asks. ``lbaas.network.security_groups.EmbeddedSecurityGroups`` is the
implementation over lbaas's own tables (served as ``/v2.0/security-groups``). An
operator's real Neutron would be another implementation reading Neutron's groups, and
would have to call for the converges itself on Neutron's notifications; the graph loader
(``db/loadbalancers/graph_loader.py``) is the one other reader of the rules, and would
take them from the same place (see docs/architecture.md, "Security groups").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from lbaas.db.session import Session


class SecurityGroupRegistry(Protocol):
    def require_usable(self, session: Session, project_id: str, group_ids: Sequence[str]) -> None:
        """400 (Octavia's ``Security Group <id> not found.``) unless every group exists in
        ``project_id`` and lbaas can enforce it."""

    def loadbalancers_using(self, session: Session, project_id: str, group_id: str) -> list[str]:
        """The live load balancers whose VIP uses the group (to converge on a change)."""
