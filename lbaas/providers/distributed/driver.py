"""The distributed provider: every node balances every distributed load balancer itself.

No amphora. ``apply`` turns the graph into one ``L4ServiceSpec`` (``translate``) and sends
it to the agents of every node of the ``NodeDirectory`` at once; each agent programs ``lbaas.l4``'s
engine in its node's own network namespace and runs the node's health checker, so a
client's flow is balanced on the client's node and goes straight to a member. A node that
cannot be reached fails the converge (temporary, so it is retried) after every other node
got the spec: the reachable nodes are never held back by one that is down.

One node, chosen at random per load balancer (``entry``), is also where traffic with no
source node enters: its spec says ``entry``, and its agent holds the VIP (answering ARP
and ping) and masquerades what it forwards. The status poll moves it when nodes change.
With an L4 tier (``tier.groups``) there is no entry node: the VIP is placed in a group
(``placement``) and the specs of that group's nodes say ``announce``, so their agents announce
it to the tier's router over BGP and the router spreads outside traffic over them (ECMP).

Nodes come from settings and the fleet's hosts registry (``registry``). A node that does
not carry a load balancer when asked about it (a host new to the fleet or back from DOWN)
is programmed then (``_catch_up``), so every live host balances it.

Member health comes back by polling: ``report`` asks every node what its checker sees and
``combine`` takes the majority. The converge uses it through ``status`` right after
``apply``; the health manager polls it every ``providers.distributed_status_interval``
(``lbaas.health.distributed_poll``) so that later changes reach the API.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lbaas.certs.authority import CertificateAuthority
from lbaas.errors import AgentUnreachable, LbaasError
from lbaas.fleet.client_l4 import L4AgentClient
from lbaas.fleet.peer_versions import CALLED_FORGET_AFTER, PeerVersions
from lbaas.model.fleet import agent_server_name
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport
from lbaas.providers.base import ApplyResult, ProviderCapabilities, ProviderContext, ProviderDriver
from lbaas.providers.distributed.base import HostBindings, Node, NodeDirectory
from lbaas.providers.distributed.capabilities import (
    RETURN_MODES,
    TIER_GROUP,
    TIER_RETURN_MODE,
    distributed_capabilities,
)
from lbaas.providers.distributed.combine import combine
from lbaas.providers.distributed.entry import entry_node
from lbaas.providers.distributed.locality import (
    NoHostBindings,
    PortHostBindings,
    localised,
    locality_moved,
    member_hosts,
    prefers_local,
)
from lbaas.providers.distributed.nodes import SettingsNodeDirectory
from lbaas.providers.distributed.placement import announcing_nodes
from lbaas.providers.distributed.places import Placement, apply_placement, place, recovered
from lbaas.providers.distributed.registry import RegistryNodeDirectory
from lbaas.providers.distributed.translate import service_spec
from lbaas.wire.l4 import L4ListenerSpec, L4ServiceSpec, L4ServiceStatus

if TYPE_CHECKING:
    from lbaas.db.jobs.job_queue import Claim

LOG = logging.getLogger(__name__)

ClientFactory = Callable[[Node], L4AgentClient]
NodeCall = Callable[[Node, L4AgentClient], object]
#: Nodes programmed at once by one converge.
_MAX_PARALLEL = 16


def _for_node(
    spec: L4ServiceSpec, entry: bool, announce: bool = False, return_mode: str = "nat"
) -> L4ServiceSpec:
    """The spec as one node gets it: its roles, and the tier's return mode if it announces."""
    if not entry and not announce:
        return spec
    mode = return_mode if announce else "nat"
    return spec.model_copy(update={"entry": entry, "announce": announce, "return_mode": mode})


def _directory(context: ProviderContext) -> NodeDirectory:
    """The settings' nodes, with the hosts registry's UP hosts when there is a database."""
    listed = SettingsNodeDirectory(context.settings)
    providers = context.settings.providers
    if context.database is None or not providers.distributed_use_hosts:
        return listed
    return RegistryNodeDirectory(context.database, listed, bool(providers.distributed_nodes))


def _holds(listing: Mapping[str, L4ServiceStatus], lb_id: str, version: int) -> bool:
    """Whether a node's listing has the load balancer applied at ``version``, error-free."""
    seen = listing.get(lb_id)
    return seen is not None and seen.applied_version == version and seen.last_error is None


@dataclass(frozen=True)
class NodeViews:
    """One status round's reading of the nodes (``DistributedProvider.node_views``): per
    node name that answered, its views by load balancer id, or None for an agent of an
    earlier release (asked per load balancer). A node left out did not answer."""

    by_node: dict[str, dict[str, L4ServiceStatus] | None]


class DistributedProvider(ProviderDriver):
    description = "L4 (TCP/UDP) balanced in the kernel of every node, on the client's node."

    def __init__(
        self,
        context: ProviderContext,
        *,
        directory: NodeDirectory | None = None,
        clients: ClientFactory | None = None,
        bindings: HostBindings | None = None,
    ) -> None:
        """Build from settings; ``directory``, ``clients`` and ``bindings`` replace the node
        list, the agents and the ports' host bindings (``locality``)."""
        super().__init__(context)
        self._directory = directory or _directory(context)
        if bindings is None:
            database = context.database
            bindings = NoHostBindings() if database is None else PortHostBindings(database)
        self._bindings = bindings
        self._new_client = clients or self._tls_client
        self._clients: dict[str, L4AgentClient] = {}
        self._versions = PeerVersions(
            CALLED_FORGET_AFTER
        )  # the nodes' wire versions, as this process hears
        self._graphs: dict[str, LoadBalancer] = {}
        # Per load balancer: the version last sent, and per listener id its places and
        # tombstones (``places``).
        self._placements: dict[str, tuple[int, dict[str, Placement]]] = {}
        self._lock = threading.Lock()

    def _tls_client(self, node: Node) -> L4AgentClient:
        pki = Path(self.context.settings.state_dir).absolute() / "pki"
        ca = CertificateAuthority.load_or_create(pki)
        tls = ca.ensure_identity(pki / "controller", "controller", "client")
        # A fleet host's agent must present its host's name; a listed URL is checked as a URL.
        name = None if node.host_id is None else agent_server_name(node.host_id)
        return L4AgentClient(
            node.agent_url,
            tls=tls,
            timeout=30,
            server_name=name,
            peer=node.host_id or node.name,
            versions=self._versions,
        )

    def _client(self, node: Node) -> L4AgentClient:
        with self._lock:
            client = self._clients.get(node.agent_url)
            if client is None:
                client = self._clients[node.agent_url] = self._new_client(node)
            return client

    def capabilities(self) -> ProviderCapabilities:
        return distributed_capabilities(self.context.settings.tier.groups)

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def apply(self, graph: LoadBalancer, fence: Claim, *, rebuild: bool = False) -> ApplyResult:
        """Send the service to every node; nothing is written to the database, so no fence."""
        nodes = self._directory.nodes()
        entry, announcing = self._roles(graph, nodes)
        spec = self._placed(service_spec(graph, time.time_ns()), nodes, keep=True)
        mode = self._return_mode(graph)
        hosts = member_hosts(graph, self._bindings)
        self._each_node(
            nodes,
            lambda node, client: client.put_l4(
                _for_node(
                    localised(spec, hosts, node.host_id),
                    node == entry,
                    node.name in announcing,
                    mode,
                )  # fmt: skip
            ),
            f"apply {graph.id}",
        )
        with self._lock:
            self._graphs[graph.id] = graph
        return ApplyResult(serving=True, detail="distributed", version=spec.version)

    def applied_versions(self, wanted: Mapping[str, int]) -> set[str] | None:
        """The ids of ``wanted`` that every node carries at exactly the version given: one
        listing per node for all of them (the status poll's ``node_views``), instead of a
        converge each (issue 34: a full resync of 10,000). None, when no node is known yet
        (a registry whose hosts are not heard from again after a restart), a node does not
        answer or one of a release that cannot list: the resync cannot tell now."""
        nodes = self._directory.nodes()
        if not wanted:
            return set()
        if not nodes:
            return None
        views = self.node_views(nodes).by_node
        listings = [views.get(node.name) for node in nodes]
        if any(listing is None for listing in listings):
            return None
        return {
            lb_id
            for lb_id, version in wanted.items()
            if all(_holds(listing, lb_id, version) for listing in listings if listing is not None)
        }

    def delete(self, loadbalancer_id: LoadBalancerId, fence: Claim) -> None:
        self._each_node(
            self._directory.nodes(),
            lambda node, client: client.delete_l4(loadbalancer_id),
            f"delete {loadbalancer_id}",
        )
        with self._lock:
            self._graphs.pop(loadbalancer_id, None)
            self._placements.pop(loadbalancer_id, None)

    def status(self, loadbalancer_id: LoadBalancerId) -> HealthReport | None:
        with self._lock:
            graph = self._graphs.get(loadbalancer_id)
        return None if graph is None else self.report(graph)

    def node_views(self, nodes: list[Node] | None = None) -> NodeViews:
        """Every node's view of every load balancer it carries, one call per node, all
        nodes at once: what one round of the status poll reads (issue 34: a call per load
        balancer per node made a round's cost grow with the load balancers). A node that
        does not answer is left out and logged once per round, not once per load balancer.
        ``nodes``: the directory's nodes as the caller already read them (the resync's
        check compares against the same list)."""
        if nodes is None:
            nodes = self._directory.nodes()

        def listing(node: Node) -> tuple[str, dict[str, L4ServiceStatus] | None] | None:
            try:
                return node.name, self._client(node).list_l4(local=True)
            except LbaasError as exc:
                LOG.warning("node %s did not report: %s", node.name, exc)
                return None

        if not nodes:
            return NodeViews({})
        with ThreadPoolExecutor(max_workers=min(len(nodes), _MAX_PARALLEL)) as pool:
            answers = [answer for answer in pool.map(listing, nodes) if answer is not None]
        return NodeViews(dict(answers))

    def _view_of(
        self, node: Node, lb_id: str, local: bool, views: NodeViews | None
    ) -> L4ServiceStatus | None:
        """``node``'s view of ``lb_id``: from ``views`` where the round read it, else asked."""
        if views is None:
            return self._client(node).get_l4(lb_id, local=local)
        if node.name not in views.by_node:
            raise AgentUnreachable("The node did not answer this round.", 2.0, node.name)
        listed = views.by_node[node.name]
        if listed is None:  # an agent of an earlier release: asked per load balancer
            return self._client(node).get_l4(lb_id, local=local)
        return listed.get(lb_id)

    def report(
        self,
        graph: LoadBalancer,
        kept: Callable[[str], bool] = lambda _lb_id: True,
        reconverge: Callable[[str], object] | None = None,
        round_views: NodeViews | None = None,
    ) -> HealthReport | None:
        """Every node's view of ``graph``, combined by majority (None: no node answered).

        A node that lacks ``graph`` is programmed with it, but only while ``kept`` (the
        database says the load balancer is not being deleted), asked again after the
        call: a delete converge that ran meanwhile would otherwise find its work undone on
        that node, and a VIP held there for good. With ``reconverge`` (the status poll),
        a node whose local members no longer match the ports (``locality_moved``) is left
        as it is and ``reconverge`` is called once: the poll's graph may be one read old,
        so a fresh converge reprograms. Without it (the converge's own status call, right
        after it read the bindings) locality is not asked about. ``round_views``: the round's
        ``node_views`` (the poll), read instead of asking each node about ``graph``; a node
        it lacks did not answer this round and does not vote.
        """
        views: list[L4ServiceStatus | None] = []
        nodes = self._directory.nodes()
        entry, announcing = self._roles(graph, nodes)
        local = reconverge is not None and prefers_local(graph)
        hosts = member_hosts(graph, self._bindings) if local else {}
        moved: list[str] = []
        # The announcing nodes first: a VIP moved to another group is announced by its new
        # group before the old one withdraws it (make before break).
        for node in sorted(nodes, key=lambda node: node.name not in announcing):
            announce = node.name in announcing
            try:
                view = self._view_of(node, graph.id, local, round_views)
                # A host new to the fleet (or back with nothing), or the entry or group moved.
                if view is None or (view.entry, view.announce) != (node == entry, announce):
                    if not kept(graph.id):
                        continue  # being deleted: its converge clears every node
                    view = self._reprogram(node, graph, nodes, node == entry, announce)
                    if not kept(graph.id):  # deleted while this call ran: undo it here
                        self._try(node, lambda _n, c: c.delete_l4(graph.id), "undo")
                        continue
                elif locality_moved(view, graph, hosts, node.host_id):
                    moved.append(node.name)
                views.append(view)
            except LbaasError as exc:
                if (
                    round_views is None or node.name in round_views.by_node
                ):  # else node_views logged
                    LOG.warning("node %s did not report on %s: %s", node.name, graph.id, exc)
        if moved and reconverge is not None:
            LOG.info("port bindings moved members onto or off nodes %s of %s: converging it",
                     ", ".join(moved), graph.id)  # fmt: skip
            reconverge(graph.id)
        return combine(graph, views, answered=len(views))

    def _roles(self, graph: LoadBalancer, nodes: list[Node]) -> tuple[Node | None, frozenset[str]]:
        """The entry node (none with a tier) and the names of the nodes announcing the VIP."""
        tier = self.context.settings.tier
        if tier.groups:
            wanted = graph.flavor.get(TIER_GROUP)
            preferred = wanted if isinstance(wanted, str) else None
            return None, announcing_nodes(graph.id, tier.groups, tier.placement, preferred)
        return entry_node(graph.id, nodes), frozenset()

    def _return_mode(self, graph: LoadBalancer) -> str:
        """How members answer the tier's flows: the flavor's choice, else the deployment's."""
        wanted = graph.flavor.get(TIER_RETURN_MODE)
        if isinstance(wanted, str) and wanted in RETURN_MODES:
            return wanted
        return self.context.settings.tier.return_mode

    def _reprogram(
        self,
        node: Node,
        graph: LoadBalancer,
        nodes: list[Node],
        entry: bool,
        announce: bool = False,
    ) -> L4ServiceStatus:
        """Program ``graph`` (as the poll loaded it) on a node that lacks it or whose entry
        role changed.

        Not fenced: a converge of a newer graph racing this call can be overtaken on that
        node until the next change of the load balancer; the window is one status call.
        """
        LOG.info("programming distributed load balancer %s on node %s (entry: %s, announce: %s)",
                 graph.id, node.name, entry, announce)  # fmt: skip
        spec = self._placed(service_spec(graph, time.time_ns()), nodes, keep=False)
        spec = localised(spec, member_hosts(graph, self._bindings), node.host_id)
        return self._client(node).put_l4(_for_node(spec, entry, announce, self._return_mode(graph)))

    def _placed(self, spec: L4ServiceSpec, nodes: list[Node], *, keep: bool) -> L4ServiceSpec:
        """``spec`` with the Maglev places and tombstones of its listeners (``places``).

        They come from what this controller last sent, or, after a restart, from what a
        node applied, so every node keeps getting the same tables. ``keep``: remember the
        result (a converge); a node catching up with the poll's graph leaves it alone.
        """
        with self._lock:
            remembered = self._placements.get(spec.loadbalancer_id)
        # Another controller (or worker) may have sent a newer spec since: one node's
        # view tells, and when nothing is remembered every node's newest one is read.
        seen = self._applied_status(spec.loadbalancer_id, nodes, first=remembered is not None)
        known: dict[str, Placement | None] = {}
        if remembered is not None:
            known = dict(remembered[1])
        if seen is not None and (remembered is None or (seen.applied_version or 0) > remembered[0]):
            known = {li.id: recovered(li, seen) for li in spec.listeners}
        placements = {li.id: place(known.get(li.id), li) for li in spec.listeners}
        if keep:
            with self._lock:
                self._placements[spec.loadbalancer_id] = (spec.version, placements)
        listeners: tuple[L4ListenerSpec, ...] = tuple(
            apply_placement(li, placements[li.id]) for li in spec.listeners
        )
        return spec.model_copy(update={"listeners": listeners})

    def _applied_status(
        self, lb_id: str, nodes: list[Node], *, first: bool
    ) -> L4ServiceStatus | None:
        """The newest status any node gives of ``lb_id`` (None: none carries it); with
        ``first``, the first node's that carries it."""
        best: L4ServiceStatus | None = None
        for node in nodes:
            try:
                seen = self._client(node).get_l4(lb_id, placement=True)
            except LbaasError as exc:
                LOG.warning("node %s did not report on %s: %s", node.name, lb_id, exc)
                continue
            if seen is not None and (
                best is None or (seen.applied_version or 0) > (best.applied_version or 0)
            ):
                best = seen
                if first:
                    break
        return best

    def _try(self, node: Node, call: NodeCall, what: str) -> bool:
        """Whether ``call`` reached ``node``; other errors (a refused spec) are raised."""
        try:
            call(node, self._client(node))
        except AgentUnreachable as exc:
            LOG.warning("%s on node %s failed: %s", what, node.name, exc)
            return False
        return True

    def _each_node(self, nodes: list[Node], call: NodeCall, what: str) -> None:
        if not nodes:
            raise AgentUnreachable("No node can carry distributed load balancers.", 5.0, what)
        # All nodes at once: each loads its own tables (a full load takes a second or more),
        # so a converge takes as long as the slowest node, not the sum of them all.
        with ThreadPoolExecutor(max_workers=min(len(nodes), _MAX_PARALLEL)) as pool:
            outcomes = list(pool.map(lambda node: self._try(node, call, what), nodes))
        failed = [node.name for node, reached in zip(nodes, outcomes, strict=True) if not reached]
        if failed:
            raise AgentUnreachable(
                "Some nodes could not be reached.", 2.0, f"{what}: unreachable {failed}"
            )
