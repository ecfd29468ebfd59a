"""``render_haproxy_config``: one load-balancer graph in, one HAProxy configuration out.

One HAProxy process serves one load balancer, all its listeners in one file, so a change to
any object under the load balancer re-renders the whole file and the agent compares it with
what runs. The function is pure: the same graph and context always give the same text, with
no I/O, which is what lets the controller render and the agent validate the same bytes.

It works in two steps: ``build_haproxy_view`` refuses what the provider cannot do and turns
the graph into the HAProxy-shaped view (``view``), then ``emit_config`` writes the text.

The global section is written for HAProxy's master-worker mode, which the agent chooses on
the command line (``haproxy -W -db -f cfg`` or ``-W -D``): the runtime socket is opened at
admin level with ``expose-fd listeners``, so a reload hands the listening sockets to the new
worker and no connection is refused while it starts, and server weights and states set at
run time are carried over through ``server-state-file`` (see
``HaproxyContext.server_state_file``). The process-wide ``maxconn`` is the context's
``maxconn_default`` and never a tenant's number: HAProxy needs about two file descriptors
per connection and refuses to start when it cannot raise its descriptor limit to match, so
the cap is a host decision (see ``HaproxyContext.maxconn_default``). A listener's
``connection_limit`` above it is rendered as asked and capped by the process. Access logs
go through a ring to the agent's socket when the context names one (``access_log``); statistics
are read from the runtime socket.
"""

from __future__ import annotations

from lbaas.model.graph import LoadBalancer
from lbaas.render.haproxy.addresses import normalised_address
from lbaas.render.haproxy.backend import backend_of
from lbaas.render.haproxy.context import PEERS_SECTION, HaproxyContext
from lbaas.render.haproxy.emit import emit_config
from lbaas.render.haproxy.frontend import frontend_of
from lbaas.render.haproxy.names import checked_id
from lbaas.render.haproxy.selection import ordered_listeners, pools_in_use
from lbaas.render.haproxy.unsupported import refuse_unsupported
from lbaas.render.haproxy.view import GlobalSection, HaproxyConfig, Peer, PeersSection


def render_haproxy_config(lb: LoadBalancer, ctx: HaproxyContext) -> str:
    """The HAProxy configuration text serving every listener of ``lb``.

    Raises ``PermanentError`` for what this provider cannot serve (TERMINATED_HTTPS without certificate files, UDP and
    SCTP listeners, among others: see ``unsupported``) and for malformed graph data.
    """
    return emit_config(build_haproxy_view(lb, ctx))


def build_haproxy_view(lb: LoadBalancer, ctx: HaproxyContext) -> HaproxyConfig:
    """The HAProxy-shaped view of ``lb``: every decision of the render, no text yet."""
    refuse_unsupported(lb, ctx)
    normalised_address(ctx.bind_address)
    uses = pools_in_use(lb)
    backends = tuple(backend_of(use.pool, use.listeners, ctx) for use in uses)
    frontends = tuple(frontend_of(listener, lb, ctx) for listener in ordered_listeners(lb))
    external_checks = any(
        be.health_check is not None and be.health_check.external_command is not None
        for be in backends
    )
    return HaproxyConfig(
        load_balancer_id=checked_id(lb.id),
        global_section=GlobalSection(
            maxconn=ctx.maxconn_default,
            runtime_socket=ctx.runtime_socket,
            server_state_file=ctx.server_state_file,
            user=ctx.user,
            group=ctx.group,
            external_checks=external_checks,
            hard_stop_after=ctx.hard_stop_after,
            local_peer=None if ctx.peers is None else checked_id(ctx.peers.local_name),
            access_log_socket=ctx.access_log_socket,
        ),
        frontends=frontends,
        backends=backends,
        peers=_peers_section(ctx),
    )


def _peers_section(ctx: HaproxyContext) -> PeersSection | None:
    """The pair's ``peers`` section; its names are ids and its addresses are checked."""
    if ctx.peers is None:
        return None
    peers = tuple(
        Peer(checked_id(peer.name), normalised_address(peer.address), peer.port)
        for peer in ctx.peers.members
    )
    return PeersSection(name=PEERS_SECTION, peers=peers)
