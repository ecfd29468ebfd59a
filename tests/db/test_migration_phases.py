"""Expand and contract (``lbaas.db.migrate``): ``--expand`` stops before the first
pending contract migration, ``--contract`` applies the rest, every shipped migration
states its phase, and the code starts on a schema only expanded from the previous
release's (6824d05, revision 0007_totals)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import inspect

from lbaas.db.engine import Database
from lbaas.db.migrate import (
    current_revision,
    pending_phases,
    phase_target,
    upgrade_database,
    upgrade_on_start,
    upgrade_phase,
)
from lbaas.db.schema_check import MIGRATIONS, missing_from_database
from tests.support.databases import PostgresDatabases

PREVIOUS_RELEASE = "0007_totals"

_SCRIPT = '''"""{name}"""
from alembic import op
import sqlalchemy as sa

revision = "{name}"
down_revision = {down!r}
branch_labels = None
depends_on = None
PHASE = "{phase}"


def upgrade() -> None:
    {body}


def downgrade() -> None:
    pass
'''


def _scripts(root: Path) -> Path:
    """Migrations a (expand: table t_a), b (contract: drops t_a.old), c (expand: t_c)."""
    shutil.copy(MIGRATIONS / "env.py", root / "env.py")
    shutil.copy(MIGRATIONS / "script.py.mako", root / "script.py.mako")
    (root / "versions").mkdir()
    steps = [
        ("a", None, "expand", 'op.create_table("t_a", sa.Column("id", sa.Integer, '
         'primary_key=True), sa.Column("old", sa.Integer))'),
        ("b", "a", "contract",
         'with op.batch_alter_table("t_a") as batch:\n        batch.drop_column("old")'),
        ("c", "b", "expand", 'op.create_table("t_c", sa.Column("id", sa.Integer, primary_key=True))'),
    ]  # fmt: skip
    for name, down, phase, body in steps:
        text = _SCRIPT.format(name=name, down=down, phase=phase, body=body)
        (root / "versions" / f"{name}.py").write_text(text)
    return root


def _expand_then_contract(url: str, root: Path) -> None:
    database = Database(url)
    location = _scripts(root)
    try:
        assert [p for _, p in pending_phases(database, location)] == [
            "expand",
            "contract",
            "expand",
        ]
        assert upgrade_phase(database, "expand", location=location) == "a"
        assert current_revision(database) == "a"
        assert "old" in {c["name"] for c in inspect(database.engine).get_columns("t_a")}
        assert upgrade_phase(database, "expand", location=location) is None  # b comes first
        assert upgrade_phase(database, "contract", location=location) == "c"
        assert "old" not in {c["name"] for c in inspect(database.engine).get_columns("t_a")}
        assert phase_target(database, "contract", location) is None
    finally:
        database.dispose()


def test_sqlite_expand_stops_before_a_contract_migration(tmp_path: Path) -> None:
    _expand_then_contract(f"sqlite:///{tmp_path / 'phases.sqlite'}", tmp_path)


@pytest.mark.postgres
def test_postgresql_expand_stops_before_a_contract_migration(
    tmp_path: Path, postgres: PostgresDatabases
) -> None:
    _expand_then_contract(postgres.create("phases"), tmp_path)


def test_a_process_starting_never_contracts_a_schema_in_use(tmp_path: Path) -> None:
    location = _scripts(tmp_path)
    fresh = Database(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    shared = Database(f"sqlite:///{tmp_path / 'shared.sqlite'}")
    try:
        upgrade_on_start(fresh, location)
        assert current_revision(fresh) == "c"  # an empty database: nobody else uses it
        upgrade_database(shared, "a", location=location)
        upgrade_on_start(shared, location)
        assert current_revision(shared) == "a"  # b contracts: the operator's step
    finally:
        fresh.dispose()
        shared.dispose()


def test_every_shipped_migration_states_its_phase(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'empty.sqlite'}")
    try:
        phases = pending_phases(database)  # ConfigError for one without PHASE
    finally:
        database.dispose()
    assert phases and {phase for _, phase in phases} <= {"expand", "contract"}


def _expanded_from_previous_release(url: str) -> list[str]:
    database = Database(url)
    try:
        upgrade_database(database, PREVIOUS_RELEASE)
        upgrade_phase(database, "expand")
        return missing_from_database(database.engine)
    finally:
        database.dispose()


def test_sqlite_this_code_runs_on_the_expanded_schema(tmp_path: Path) -> None:
    assert _expanded_from_previous_release(f"sqlite:///{tmp_path / 'x.sqlite'}") == []


@pytest.mark.postgres
def test_postgresql_this_code_runs_on_the_expanded_schema(postgres: PostgresDatabases) -> None:
    assert _expanded_from_previous_release(postgres.create("expanded")) == []
