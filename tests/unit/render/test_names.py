"""Names must be stable, reversible and safe: the agent maps stats rows back with them."""

from __future__ import annotations

import pytest

from lbaas.errors import PermanentError
from lbaas.model.graph import L7RuleId, ListenerId, MemberId, PoolId
from lbaas.render.haproxy.names import (
    backend_name,
    frontend_name,
    parse_backend_name,
    parse_frontend_name,
    parse_server_name,
    rule_acl_name,
    server_name,
)

ID = "5f1d7c1e-8a3b-4c9e-9f20-6b1a2d3c4e5f"


def test_names_round_trip() -> None:
    assert parse_frontend_name(frontend_name(ListenerId(ID))) == ID
    assert parse_backend_name(backend_name(PoolId(ID))) == ID
    assert parse_server_name(server_name(MemberId(ID))) == ID


def test_names_are_prefixed_ids() -> None:
    assert frontend_name(ListenerId(ID)) == f"fe_{ID}"
    assert backend_name(PoolId(ID)) == f"be_{ID}"
    assert server_name(MemberId(ID)) == f"srv_{ID}"
    assert rule_acl_name(L7RuleId(ID)) == f"rule_{ID}"


@pytest.mark.parametrize(
    "name", ["FRONTEND", "BACKEND", "stats", "", "fe_", "be_" + ID, "srv_" + ID, "fe_a b"]
)
def test_foreign_frontend_names_parse_to_none(name: str) -> None:
    assert parse_frontend_name(name) is None


def test_kinds_do_not_mix() -> None:
    assert parse_backend_name(frontend_name(ListenerId(ID))) is None
    assert parse_server_name(backend_name(PoolId(ID))) is None
    assert parse_server_name("BACKEND") is None


@pytest.mark.parametrize("bad", ["", "a b", "x\nglobal", "-leading", "quote'", "é"])
def test_ids_haproxy_cannot_hold_are_refused(bad: str) -> None:
    with pytest.raises(PermanentError):
        frontend_name(ListenerId(bad))
