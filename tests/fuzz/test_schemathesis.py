"""Schemathesis against the app's own OpenAPI document: no request may cause a 5xx, every
answer is one the document declares, with the Content-Type it declares, and a request
the document calls valid is not refused as malformed (a 400 other than Octavia's
semantic refusals means the document omits a rule the API enforces).

Runs in-process on SQLite and on PostgreSQL (which refuses what SQLite stores: NUL
characters, integers past 32 bits, text where a timestamp belongs) with the noop
provider. Every operation gets generated bodies, paths and query strings (valid and
invalid). ``bench/schemathesis_run.py`` runs the stateful phase and every other check
against a real ``lbaas serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

from lbaas.api.openapi_rules import SEMANTIC_REFUSAL
from tests.support.control_plane import asgi_app, build_plane, make_settings
from tests.support.databases import PostgresDatabases

pytestmark = pytest.mark.slow


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def fuzz_app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    state: Path = tmp_path_factory.mktemp("fuzz-state")
    url = ""
    if request.param == "postgres":
        postgres: PostgresDatabases = request.getfixturevalue("postgres")
        url = postgres.create("fuzz")
    settings_ = make_settings(state, url, api={"auth_strategy": "noauth"})
    plane = build_plane(settings_)
    plane.start()
    try:
        yield asgi_app(plane)
    finally:
        plane.stop()


# The Networking routes are served under /v2.0 and again under /v2 (the stock CLI asks
# there too) by the same handlers: fuzzing the /v2 copies doubled their time for nothing.
NETWORKING_ALIASES = r"^/v2/(subnets|networks|floatingips|ports|extensions|security-group)"


# The single-call create's nested listeners and pools give its coverage phase some 8,700
# cases, more than every other operation together: in the suite it keeps its examples and
# fuzzing (bench/schemathesis_run.py runs every phase on it).
CONFIG = """
[[operations]]
include-path = "/v2/lbaas/loadbalancers"
include-method = "POST"
phases.coverage.enabled = false
"""


@pytest.fixture(scope="module")
def api_schema(fuzz_app: Any) -> Any:
    config = schemathesis.config.SchemathesisConfig.from_str(CONFIG)
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzz_app, config=config)
    return schema.exclude(path_regex=NETWORKING_ALIASES)


schema = schemathesis.pytest.from_fixture("api_schema")


def schema_valid_is_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 400 for a request generated as valid must be a semantic refusal."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return None
    if response.status_code != 400:
        return None
    message = str(response.json().get("faultstring", ""))
    if SEMANTIC_REFUSAL.search(message) is None:
        raise AssertionError(f"a request valid by the document was refused: {message}")
    return None


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors(case: Any) -> None:
    case.call_and_validate(
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            schema_valid_is_accepted,
        ]
    )
