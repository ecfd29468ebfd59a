"""``render_haproxy``: the configuration text and, beside it, the facts its reader needs.

The agent must know a few things about the text it runs: where the runtime socket and the
server-state file are, the global ``maxconn``, and whether a new text differs from the
running one only in what the runtime API can change without a reload (server weights and
admin states). Those are decisions of this render, so they are handed over as data taken
from the same view the text is written from, never read back out of the text.

The "only weights and states changed" question is answered by ``fixed_digest``: the digest
of the text written from the view with every server's weight and admin state set to one
value and every comment (``notes``) dropped. Two renders with equal digests therefore
differ only in those server words — the condition under which the agent takes the runtime
API path (``lbaas.amphora.runtime_changes``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from lbaas.model.graph import LoadBalancer
from lbaas.render.haproxy.config import build_haproxy_view
from lbaas.render.haproxy.context import HaproxyContext
from lbaas.render.haproxy.emit import emit_config
from lbaas.render.haproxy.view import Backend, HaproxyConfig

#: Prefix of ``fixed_digest``, naming the hash so it can change without ambiguity.
DIGEST_PREFIX = "sha256:"


@dataclass(frozen=True)
class ServerSetting:
    """A server as the runtime API names it, with what the runtime API may change."""

    backend: str
    server: str
    weight: int
    disabled: bool


@dataclass(frozen=True)
class RenderedHaproxy:
    """One render: the text for HAProxy and the facts for the agent that runs it."""

    text: str
    runtime_socket: str
    server_state_file: str
    maxconn: int
    servers: tuple[ServerSetting, ...]
    fixed_digest: str


def render_haproxy(lb: LoadBalancer, ctx: HaproxyContext) -> RenderedHaproxy:
    """Render ``lb`` (as ``render_haproxy_config`` does) and describe the result."""
    view = build_haproxy_view(lb, ctx)
    return RenderedHaproxy(
        text=emit_config(view),
        runtime_socket=view.global_section.runtime_socket,
        server_state_file=view.global_section.server_state_file,
        maxconn=view.global_section.maxconn,
        servers=tuple(
            ServerSetting(be.name, server.name, server.weight, not server.enabled)
            for be in view.backends
            for server in be.servers
        ),
        fixed_digest=fixed_digest(view),
    )


def fixed_digest(view: HaproxyConfig) -> str:
    """Digest of ``view`` as text, without server weights, admin states and comments."""
    fixed = replace(
        view,
        frontends=tuple(replace(fe, notes=()) for fe in view.frontends),
        backends=tuple(_without_settings(be) for be in view.backends),
    )
    return DIGEST_PREFIX + hashlib.sha256(emit_config(fixed).encode()).hexdigest()


def _without_settings(backend: Backend) -> Backend:
    servers = tuple(replace(server, weight=1, enabled=True) for server in backend.servers)
    return replace(backend, servers=servers, notes=())
