"""Progress of long commands: one rewritten line on a terminal, plain lines elsewhere,
nothing when quiet, never on stdout; ``lbaas db upgrade`` names each migration it applies."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from lbaas.db.schema_check import MIGRATIONS
from lbaas.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_one_plain_line_per_step_and_per_tenth_of_a_count() -> None:
    out = io.StringIO()
    steps = Progress("lab up", 3, stream=out)
    for name in ("fabric", "router", "host h1"):
        steps.step(name)
    steps.finish()
    lines = out.getvalue().splitlines()
    assert [line.split("…")[0] for line in lines[:3]] == [
        "lab up [0/3] fabric",
        "lab up [1/3] router",
        "lab up [2/3] host h1",
    ]
    assert lines[3].startswith("lab up done in ") and "\r" not in out.getvalue()
    out = io.StringIO()
    count = Progress("seeding", 1000, stream=out)
    for _ in range(1000):
        count.advance()
    assert [line.split(" ")[1] for line in out.getvalue().splitlines()] == [
        f"[{n}/1000]" for n in range(100, 1001, 100)
    ]


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    out = Terminal()
    count = Progress("seeding", 1000, stream=out)
    for _ in range(1000):
        count.advance()
    count.finish()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # only the finish ends the line
    assert text.count("\r\x1b[K") < 50  # throttled, not 1000 redraws
    assert "seeding done in" in text.rsplit("\r\x1b[K", 1)[1]


def test_quiet_writes_nothing() -> None:
    out = Terminal()
    quiet = Progress("x", 2, stream=out, quiet=True)
    quiet.step("a")
    quiet.advance()
    quiet.finish()
    assert out.getvalue() == ""


def test_db_upgrade_shows_each_migration_on_stderr_and_keeps_stdout(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lbaas.db'}"
    argv = [sys.executable, "-m", "lbaas.cli", "db", "upgrade", "--database-url", url]
    argv += ["--state-dir", str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.startswith("database at revision ") and done.stdout.count("\n") == 1
    applied = [line for line in done.stderr.splitlines() if " applied " in line]
    assert len(applied) >= 6 and "0001" in applied[0], done.stderr
    again = subprocess.run([*argv, "--quiet"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "db upgrade" not in again.stderr


def test_db_upgrade_by_phase_says_what_it_applied(tmp_path: Path) -> None:
    """Rolling upgrades: ``--expand`` stops before this release's contract migration,
    ``--contract`` applies it, and a second ``--contract`` finds none and says so."""
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head == "0012_drop_lb_project_index"  # the contract one; expand ends before it
    url = f"sqlite:///{tmp_path / 'lbaas.db'}"
    argv = [sys.executable, "-m", "lbaas.cli", "db", "upgrade", "--database-url", url]
    argv += ["--state-dir", str(tmp_path)]

    def upgrade(phase: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*argv, phase], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    expand = upgrade("--expand")
    assert "db upgrade expand" in expand.stderr and " applied 0011_applied_version" in expand.stderr
    assert expand.stdout == "database at revision 0011_applied_version\n"
    contract = upgrade("--contract")
    assert f" applied {head}" in contract.stderr
    again = upgrade("--contract")
    assert "no contract migration to apply" in again.stderr
    assert contract.stdout == again.stdout == f"database at revision {head}\n"
