"""HAProxy configuration for one load balancer, rendered from its graph.

``render_haproxy_config(lb, ctx)`` is the entry point (``config``); ``render_haproxy``
(``rendered``) gives the same text with the facts the agent needs beside it; ``HaproxyContext``
(``context``) carries the deployment facts; ``names`` maps frontends, backends and servers
to lbaas ids and back, for the agent reading statistics and driving the runtime API. The
other modules are the steps in between: ``selection`` and ``unsupported`` decide what gets
rendered, ``frontend``, ``l7``, ``backend``, ``healthcheck`` and ``timeouts`` build the
HAProxy-shaped ``view``, and ``emit`` (with ``quoting`` and ``addresses``) writes the text.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lbaas.render.haproxy.config import build_haproxy_view, render_haproxy_config
    from lbaas.render.haproxy.context import HaproxyContext
    from lbaas.render.haproxy.rendered import RenderedHaproxy, ServerSetting, render_haproxy

# Loaded on first use: the agent imports only ``names`` from this package, and a
# restarted agent must not pay for the whole renderer before it serves (issue 10).
_HOME = {
    "build_haproxy_view": "config",
    "render_haproxy_config": "config",
    "HaproxyContext": "context",
    "RenderedHaproxy": "rendered",
    "ServerSetting": "rendered",
    "render_haproxy": "rendered",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "HaproxyContext",
    "RenderedHaproxy",
    "ServerSetting",
    "build_haproxy_view",
    "render_haproxy",
    "render_haproxy_config",
]
