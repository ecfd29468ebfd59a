"""Names of HAProxy frontends, backends, servers and ACLs, and the way back to lbaas ids.

The agent reads ``show stat`` and drives the runtime API (``set server <backend>/<server>
weight 0``) by name, and ``load-server-state-from-file`` carries server weights and states
across a reload by name. A name therefore has to be a pure function of the object's id:
stable across renders, never derived from anything a tenant can rename, and reversible
without a lookup table. Each name is a short kind prefix followed by the id itself. The
prefix tells a listener from a pool in a stats dump and makes the parse functions answer
None for HAProxy's own rows (``FRONTEND``, ``BACKEND``) and for anything lbaas did not name.

Ids are checked against the characters HAProxy accepts in names (letters, digits, ``-``,
``_``, ``.`` and ``:``). lbaas ids are UUIDs, so a failure means a corrupt graph, and it is
reported as a ``PermanentError`` rather than rendered into the configuration.
"""

from __future__ import annotations

import re

from lbaas.errors import PermanentError
from lbaas.model.graph import L7RuleId, ListenerId, MemberId, PoolId

FRONTEND_PREFIX = "fe_"
BACKEND_PREFIX = "be_"
SERVER_PREFIX = "srv_"
RULE_ACL_PREFIX = "rule_"

_VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def frontend_name(listener_id: ListenerId) -> str:
    """The frontend that serves this listener."""
    return _name(FRONTEND_PREFIX, listener_id)


def backend_name(pool_id: PoolId) -> str:
    """The backend that holds this pool's members (one per pool, however many users)."""
    return _name(BACKEND_PREFIX, pool_id)


def server_name(member_id: MemberId) -> str:
    """The server line of this member inside its pool's backend."""
    return _name(SERVER_PREFIX, member_id)


def rule_acl_name(rule_id: L7RuleId) -> str:
    """The ACL that evaluates one L7 rule inside its listener's frontend."""
    return _name(RULE_ACL_PREFIX, rule_id)


def parse_frontend_name(name: str) -> ListenerId | None:
    """The listener id a frontend name stands for, or None if lbaas did not name it."""
    ident = _parse(FRONTEND_PREFIX, name)
    return None if ident is None else ListenerId(ident)


def parse_backend_name(name: str) -> PoolId | None:
    """The pool id a backend name stands for, or None if lbaas did not name it."""
    ident = _parse(BACKEND_PREFIX, name)
    return None if ident is None else PoolId(ident)


def parse_server_name(name: str) -> MemberId | None:
    """The member id a server name stands for, or None (e.g. for ``BACKEND`` stat rows)."""
    ident = _parse(SERVER_PREFIX, name)
    return None if ident is None else MemberId(ident)


def checked_id(ident: str) -> str:
    """``ident`` unchanged if HAProxy accepts it in a name; PermanentError otherwise."""
    if _VALID_ID.fullmatch(ident) is None:
        raise PermanentError(
            "The load balancer could not be configured.",
            f"id {ident!r} cannot be used in an HAProxy name",
        )
    return ident


def _name(prefix: str, ident: str) -> str:
    return prefix + checked_id(ident)


def _parse(prefix: str, name: str) -> str | None:
    if not name.startswith(prefix):
        return None
    ident = name[len(prefix) :]
    return ident if _VALID_ID.fullmatch(ident) else None
