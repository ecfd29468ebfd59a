"""Schema migrations with Alembic, run programmatically (``lbaas db upgrade``).

Each migration states its ``PHASE`` for rolling upgrades: ``expand`` adds only (tables,
nullable or defaulted columns, indexes), so code of the release before keeps running on
the result; ``contract`` removes or tightens what only that older code used, and runs once
no process of it is left. ``lbaas db upgrade --expand`` applies the pending migrations up
to the first contract one (``upgrade_phase``), ``--contract`` everything after, plain
``lbaas db upgrade`` everything at once. A process that migrates at start-up (``serve``,
``enrol``: ``upgrade_on_start``) applies expand migrations only, so a new release's
process started beside the previous release's never removes what those still use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.config import Config
from sqlalchemy.exc import OperationalError

from lbaas.db.engine import Database, shown_url
from lbaas.db.schema_check import MIGRATIONS
from lbaas.errors import ConfigError

Phase = Literal["expand", "contract"]
PHASES: tuple[Phase, ...] = ("expand", "contract")


def alembic_config(database: Database, location: Path = MIGRATIONS) -> Config:
    """``location``: the migration scripts (tests give others)."""
    config = Config()
    config.set_main_option("script_location", str(location))
    config.set_main_option("sqlalchemy.url", database.url.replace("%", "%%"))
    # Processes started together each migrate: on SQLite, BEGIN IMMEDIATE makes the
    # others wait for the first one's commit (on PostgreSQL an advisory lock, env.py).
    engine = database.engine
    config.attributes["engine"] = (
        engine.execution_options(sqlite_begin="IMMEDIATE") if database.is_sqlite else engine
    )
    return config


def upgrade_database(
    database: Database,
    revision: str = "head",
    on_applied: Callable[[str], None] | None = None,
    location: Path = MIGRATIONS,
) -> None:
    """Bring the schema to ``revision``; a no-op when it is already there.
    ``on_applied`` is told each migration's revision as it is applied (progress)."""
    config = alembic_config(database, location)
    if on_applied is not None:
        config.attributes["on_version_apply"] = on_applied
    try:
        command.upgrade(config, revision)
    except OperationalError as exc:
        raise _unreachable(database, exc) from exc


def _unreachable(database: Database, exc: OperationalError) -> ConfigError:
    """A database that cannot be reached (or refuses us), in one line without a password."""
    reason = str(exc.orig or exc).strip().splitlines()[0]
    return ConfigError(f"cannot use the database at {shown_url(database.url)}: {reason}")


def current_revision(database: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    try:
        with database.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except OperationalError as exc:
        raise _unreachable(database, exc) from exc


def pending_phases(database: Database, location: Path = MIGRATIONS) -> list[tuple[str, Phase]]:
    """(revision, phase) of each migration not applied yet, oldest first."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory(str(location))
    current = current_revision(database)
    newest_first = scripts.iterate_revisions("heads", current or "base")
    pending = [script for script in newest_first if script.revision != current]
    return [(script.revision, _phase(script.module, script.revision)) for script in pending][::-1]


def _phase(module: object, revision: str) -> Phase:
    phase = getattr(module, "PHASE", None)
    if phase not in PHASES:
        raise ConfigError(f"migration {revision} states no PHASE (expand or contract)")
    return "expand" if phase == "expand" else "contract"


def phase_target(database: Database, phase: Phase, location: Path = MIGRATIONS) -> str | None:
    """The revision ``upgrade_phase`` brings the schema to; None: nothing to apply.
    expand: up to the first pending contract migration; contract: every pending one."""
    pending = pending_phases(database, location)
    if phase == "contract":
        return pending[-1][0] if pending else None
    target = None
    for revision, its_phase in pending:
        if its_phase == "contract":
            break
        target = revision
    return target


def upgrade_phase(
    database: Database,
    phase: Phase,
    on_applied: Callable[[str], None] | None = None,
    location: Path = MIGRATIONS,
) -> str | None:
    """Apply the pending migrations of ``phase`` (see the module's note); the revision
    reached, None when there was nothing to apply."""
    target = phase_target(database, phase, location)
    if target is not None:
        upgrade_database(database, target, on_applied, location)
    return target


def upgrade_showing(database: Database, phase: Phase | None, step: Callable[[str], None]) -> None:
    """``lbaas db upgrade [--expand|--contract]``: every migration (``phase`` None) or one
    phase's, each step told to ``step`` (progress lines)."""
    step(f"from revision {current_revision(database) or '(empty)'}")

    def applied(revision: str) -> None:
        step(f"applied {revision}")

    if phase is None:
        upgrade_database(database, on_applied=applied)
    elif upgrade_phase(database, phase, on_applied=applied) is None:
        step(f"no {phase} migration to apply")


def upgrade_on_start(database: Database, location: Path = MIGRATIONS) -> None:
    """A process's own migration at start-up: every migration on an empty database, else
    the expand ones only (contracting is the operator's step: ``--contract``)."""
    if current_revision(database) is None:
        upgrade_database(database, location=location)
    else:
        upgrade_phase(database, "expand", location=location)
