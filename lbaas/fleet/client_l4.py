"""The controller's side of the agent's ``/v1/l4`` routes (``wire_l4``).

An ``AgentClient`` with three more calls; errors are translated exactly as for amphorae
(unreachable, refused, failed), and it imports only the wire schemas.
"""

from __future__ import annotations

from typing import Any

from lbaas.fleet.client import AgentClient
from lbaas.wire.l4 import L4_PREFIX, L4NodeStatuses, L4ServiceSpec, L4ServiceStatus


class L4AgentClient(AgentClient):
    def put_l4(self, spec: L4ServiceSpec) -> L4ServiceStatus:
        """Send a load balancer's whole L4 service; the node converges to it."""
        if any(listener.member_down != "keep" for listener in spec.listeners):
            self.require("member_down", "a pool's member_down_policy other than keep")
        if any(listener.idle_timeout is not None for listener in spec.listeners):
            self.require("flow_limits", "a UDP listener's idle timeout")
        path = f"{L4_PREFIX}/{spec.loadbalancer_id}"
        response = self._request("PUT", path, content=spec.model_dump_json(exclude=_older(spec)))
        return L4ServiceStatus.model_validate_json(response.content)

    def get_l4(
        self, loadbalancer_id: str, *, placement: bool = False, local: bool = False
    ) -> L4ServiceStatus | None:
        """What the node sees of the load balancer, or None if it does not carry it;
        ``placement``: with the applied Maglev places; ``local``: with the members its
        spec marks local (an agent of an earlier release leaves them out)."""
        asked = [name for name, wanted in (("placement", placement), ("local", local)) if wanted]
        query = "?" + "&".join(f"{name}=true" for name in asked) if asked else ""
        path = f"{L4_PREFIX}/{loadbalancer_id}{query}"
        response = self._request("GET", path, allow_404=True)
        if response.status_code == 404:
            return None
        return L4ServiceStatus.model_validate_json(response.content)

    def list_l4(self, *, local: bool = False) -> dict[str, L4ServiceStatus] | None:
        """What the node sees of every load balancer it carries, by id, in one call; None
        from an agent of an earlier release, which has no such route (ask per load
        balancer then)."""
        path = f"{L4_PREFIX}?local=true" if local else L4_PREFIX
        response = self._request("GET", path, allow_404=True)
        if response.status_code == 404:
            return None
        return L4NodeStatuses.model_validate_json(response.content).services

    def delete_l4(self, loadbalancer_id: str) -> None:
        """Remove the load balancer's table from the node (succeeds if it is gone)."""
        self._request("DELETE", f"{L4_PREFIX}/{loadbalancer_id}")


def _older(spec: L4ServiceSpec) -> dict[str, Any]:
    """The fields newer than the agents of earlier releases (which refuse unknown fields),
    left out where they say what those agents do anyway, so such agents keep working:
    ``return_mode`` nat, ``local`` when no member is local, ``allowed_cidrs`` when no
    listener restricts its sources, ``member_down`` when every listener keeps, ``idle_timeout``
    when no listener has one (no UDP listener): an older agent asked to restrict, cut,
    reroute or time out refuses the spec."""
    exclude: dict[str, Any] = {}
    if spec.return_mode == "nat":
        exclude["return_mode"] = True
    listener_fields: dict[str, Any] = {}
    if not any(m.local for listener in spec.listeners for m in listener.members):
        listener_fields["members"] = {"__all__": {"local"}}
    if not any(listener.allowed_cidrs for listener in spec.listeners):
        listener_fields["allowed_cidrs"] = True
    if all(listener.member_down == "keep" for listener in spec.listeners):
        listener_fields["member_down"] = True
    if all(listener.idle_timeout is None for listener in spec.listeners):
        listener_fields["idle_timeout"] = True
    if listener_fields:
        exclude["listeners"] = {"__all__": listener_fields}
    return exclude
