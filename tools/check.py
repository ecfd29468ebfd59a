"""The whole test suite: static checks, then every pytest suite (slow ones included).

Run through ``./quickstart test`` (which installs first); extra arguments go to pytest.
Each step prints what it runs; the first failure stops the run with its exit status.
Which packages may import what (layers, subprocess confinement, SQLAlchemy) is
import-linter's job (.importlinter); the rules no linter has are in tools/code_rules.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MAX_LINES = 600
PROVIDER = "octavia-provider"  # lbaas's Octavia provider driver, a distribution of its own
MAX_FUNCTION_LINES = 60
ENUMS = "lbaas/model/enums.py"
# Migrations are history: they keep the names and literals of the schema they created.
MIGRATIONS = "lbaas/db/migrations/"

sys.path.insert(0, str(ROOT))
from tools import code_rules  # noqa: E402


def run(title: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
    print(f"\n== {title}: {' '.join(cmd)}", flush=True)
    result = subprocess.run(cmd, cwd=ROOT, env=env)
    if result.returncode != 0:
        print(f"== FAILED: {title}", flush=True)
        sys.exit(result.returncode)


def check_module_sizes() -> None:
    """Modules over 600 lines must say why at the top (# size: <reason>)."""
    print("\n== module sizes", flush=True)
    bad = []
    for path in sorted((ROOT / "lbaas").rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > MAX_LINES and "# size:" not in text[:2000]:
            bad.append(str(path.relative_to(ROOT)))
    if bad:
        print("modules over 600 lines without a '# size:' reason: " + ", ".join(bad))
        sys.exit(1)


def check_rules(title: str, findings: list[code_rules.Finding], advice: str) -> bool:
    """Print what a code rule found; True when it found nothing."""
    print(f"\n== {title}", flush=True)
    for finding in findings:
        print(finding)
    if findings:
        print(f"== {len(findings)} found: {advice}")
    return not findings


def lbaas_sources(*skip: str) -> list[Path]:
    return [
        path
        for path in sorted((ROOT / "lbaas").rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(skip)
    ]


def check_code_rules() -> None:
    """The rules of code_rules.py: no patching in tests, short functions, status enums.

    Every rule runs and reports before a failure stops the run.
    """
    tests = sorted((ROOT / "tests").rglob("*.py"))
    no_patching = check_rules(
        "no patching of lbaas in tests",
        code_rules.scan(tests, ROOT, "patching"),
        "tests hand fakes in through constructors",
    )
    short_functions = check_rules(
        f"functions of at most {MAX_FUNCTION_LINES} lines in lbaas/",
        code_rules.scan(lbaas_sources(MIGRATIONS), ROOT, "length", limit=MAX_FUNCTION_LINES),
        "split them into named steps",
    )
    statuses = code_rules.status_values((ROOT / ENUMS).read_text())
    enums_only = check_rules(
        "no status string literals outside " + ENUMS,
        code_rules.scan(lbaas_sources(MIGRATIONS, ENUMS), ROOT, "status", values=statuses),
        "use ProvisioningStatus, OperatingStatus or AmphoraStatus",
    )
    if not (no_patching and short_functions and enums_only):
        sys.exit(1)


def workers() -> list[str]:
    """Two pytest-xdist workers where there are two cores (``--dist loadgroup``): the tests
    that own the host (the ``system`` group, see tests/conftest.py) one after another in
    one, the in-process tests beside them in the other (19-24 min of pytest instead of 27).
    ``TEST_WORKERS=1`` runs one process; ``TEST_WORKERS=N`` asks for N. Not an ``LBAAS_``
    name: every lbaas process the tests start would read that as one of its settings."""
    count = os.environ.get("TEST_WORKERS") or str(min(2, os.cpu_count() or 1))
    if count == "1":
        return ["-p", "no:xdist"]
    return ["-n", count, "--dist", "loadgroup"]


def main() -> None:
    sources = ["lbaas", "tests", "bench", "tools", PROVIDER]
    run("ruff lint", [str(BIN / "ruff"), "check", *sources])
    run("ruff format", [str(BIN / "ruff"), "format", "--check", *sources])
    run("mypy strict", [str(BIN / "mypy"), "--strict", "lbaas"])
    # The Octavia provider driver: its own distribution, its own mypy settings (octavia-lib
    # has no types and is not in this environment).
    run(
        "mypy strict (octavia-provider)",
        [
            str(BIN / "mypy"),
            "--strict",
            "--config-file",
            f"{PROVIDER}/pyproject.toml",
            f"{PROVIDER}/lbaas_octavia_provider",
        ],
    )
    path = os.pathsep.join(filter(None, [str(ROOT / PROVIDER), os.environ.get("PYTHONPATH")]))
    run("import layers", [str(BIN / "lint-imports")], env={**os.environ, "PYTHONPATH": path})
    check_module_sizes()
    check_code_rules()
    run("config reference is current", [sys.executable, "tools/config_reference.py", "--check"])
    run(
        "pytest",
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *workers(), *sys.argv[1:]],
    )


if __name__ == "__main__":
    main()
