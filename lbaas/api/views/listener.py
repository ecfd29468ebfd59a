"""The listener object as Octavia renders it, for one row or a page of rows.

Rendering a page costs a fixed number of queries (policy ids and tags for all rows at
once), whatever the page size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbaas.api.views.common import ids, lifecycle, ownership, text
from lbaas.db.listener_queries import ordered_children_ids
from lbaas.db.listing import tags_of
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow, ListenerRow


def listener_view(
    row: ListenerRow, l7policy_ids: Sequence[str], tags: Sequence[str]
) -> dict[str, Any]:
    """The full listener object; policies as ``[{"id"}]`` in evaluation order."""
    return {
        "id": row.id,
        "name": text(row.name),
        "description": text(row.description),
        "admin_state_up": row.admin_state_up,
        **ownership(row),
        **lifecycle(row),
        "protocol": row.protocol,
        "protocol_port": row.protocol_port,
        "connection_limit": row.connection_limit,
        "default_tls_container_ref": row.default_tls_container_ref,
        "sni_container_refs": list(row.sni_container_refs or []),
        "default_pool_id": row.default_pool_id,
        "l7policies": ids(l7policy_ids),
        "insert_headers": dict(row.insert_headers or {}),
        "loadbalancers": ids([row.loadbalancer_id]),
        "timeout_client_data": row.timeout_client_data,
        "timeout_member_connect": row.timeout_member_connect,
        "timeout_member_data": row.timeout_member_data,
        "timeout_tcp_inspect": row.timeout_tcp_inspect,
        "tags": list(tags),
        "client_ca_tls_container_ref": row.client_ca_tls_container_ref,
        "client_authentication": row.client_authentication,
        "client_crl_container_ref": row.client_crl_container_ref,
        "allowed_cidrs": list(row.allowed_cidrs) if row.allowed_cidrs else None,
        "tls_ciphers": row.tls_ciphers,
        "tls_versions": list(row.tls_versions) if row.tls_versions is not None else None,
        "alpn_protocols": list(row.alpn_protocols) if row.alpn_protocols is not None else None,
        "hsts_max_age": row.hsts_max_age,
        "hsts_include_subdomains": row.hsts_include_subdomains,
        "hsts_preload": row.hsts_preload,
    }


def render_listeners(session: Session, rows: Sequence[ListenerRow]) -> list[dict[str, Any]]:
    """Views of many listeners with a fixed number of queries."""
    listener_ids = [r.id for r in rows]
    policies = ordered_children_ids(
        session,
        L7PolicyRow.id,
        L7PolicyRow.listener_id,
        listener_ids,
        [L7PolicyRow.position, L7PolicyRow.created_at],
        L7PolicyRow.provisioning_status != "DELETED",
    )
    tags = tags_of(session, listener_ids)
    return [listener_view(r, policies[r.id], tags[r.id]) for r in rows]
