"""``render_haproxy``: the facts beside the text come from the same render, not the text."""

from __future__ import annotations

from lbaas.model.graph import LoadBalancer, MemberId, PoolId
from lbaas.render.haproxy import render_haproxy, render_haproxy_config
from lbaas.render.haproxy.names import backend_name, server_name
from tests.support.graphs import listener, load_balancer, member, pool, uid

from .golden_cases import GOLDEN_CONTEXT


def _lb(
    *, weight: int = 1, admin: bool = True, port: int = 8080, limit: int | None = None
) -> LoadBalancer:
    members = [member("a", "10.0.0.1", port, weight=weight, admin=admin), member("b", "10.0.0.2")]
    front = listener("web", default_pool="web", connection_limit=limit or -1)
    return load_balancer([front], [pool("web", members)])


def test_the_facts_describe_the_text_of_the_same_render() -> None:
    rendered = render_haproxy(_lb(weight=7, admin=False), GOLDEN_CONTEXT)
    assert rendered.text == render_haproxy_config(_lb(weight=7, admin=False), GOLDEN_CONTEXT)
    assert rendered.runtime_socket == GOLDEN_CONTEXT.runtime_socket
    assert rendered.server_state_file == GOLDEN_CONTEXT.server_state_file
    assert rendered.maxconn == GOLDEN_CONTEXT.maxconn_default
    by_name = {s.server: s for s in rendered.servers}
    first = by_name[server_name(MemberId(uid("member", "a")))]
    assert first.backend == backend_name(PoolId(uid("pool", "web")))
    assert (first.weight, first.disabled) == (7, True)
    assert f"{first.server} 10.0.0.1:8080 weight 7 disabled" in rendered.text


def test_weights_and_admin_states_alone_keep_the_digest() -> None:
    base = render_haproxy(_lb(), GOLDEN_CONTEXT)
    for changed in (_lb(weight=0), _lb(weight=256, admin=False), _lb(admin=False)):
        other = render_haproxy(changed, GOLDEN_CONTEXT)
        assert other.text != base.text
        assert other.fixed_digest == base.fixed_digest
        assert [(s.backend, s.server) for s in other.servers] == [
            (s.backend, s.server) for s in base.servers
        ]


def test_any_other_change_changes_the_digest() -> None:
    base = render_haproxy(_lb(), GOLDEN_CONTEXT).fixed_digest
    assert render_haproxy(_lb(port=9090), GOLDEN_CONTEXT).fixed_digest != base
    assert render_haproxy(_lb(limit=5000), GOLDEN_CONTEXT).fixed_digest != base
    fewer = load_balancer(
        [listener("web", default_pool="web")], [pool("web", [member("a", "10.0.0.1")])]
    )
    assert render_haproxy(fewer, GOLDEN_CONTEXT).fixed_digest != base
