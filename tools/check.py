"""The whole test suite: static checks, then every pytest suite (slow ones included).

Run through ``./quickstart test`` (which installs first); extra arguments go to pytest.
Each step prints what it runs; the first failure stops the run with its exit status.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MAX_LINES = 600
SUBPROCESS_ALLOWED = ("lbaas/agent/host/", "lbaas/cli.py", "lbaas/child_worker.py")


def run(title: str, cmd: list[str]) -> None:
    print(f"\n== {title}: {' '.join(cmd)}", flush=True)
    result = subprocess.run(cmd, cwd=ROOT)
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


def check_subprocess_imports() -> None:
    """Only the agent's host layer and the CLI run external programs."""
    print("\n== subprocess confinement", flush=True)
    pattern = re.compile(r"^\s*(import subprocess|from subprocess import)", re.M)
    bad = []
    for path in sorted((ROOT / "lbaas").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if pattern.search(path.read_text()) and not rel.startswith(SUBPROCESS_ALLOWED):
            bad.append(rel)
    if bad:
        print(
            "subprocess imported outside " + ", ".join(SUBPROCESS_ALLOWED) + ": " + ", ".join(bad)
        )
        sys.exit(1)


def check_no_mock_patch() -> None:
    """Tests swap implementations through constructors; they do not patch lbaas."""
    print("\n== mock.patch budget (0)", flush=True)
    bad = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("*.py")
        if "mock.patch(" in p.read_text()
    ]
    if bad:
        print("mock.patch used in: " + ", ".join(bad))
        sys.exit(1)


def main() -> None:
    run("ruff lint", [str(BIN / "ruff"), "check", "lbaas", "tests", "bench", "tools"])
    run("ruff format", [str(BIN / "ruff"), "format", "--check", "lbaas", "tests", "bench", "tools"])
    run("mypy strict", [str(BIN / "mypy"), "--strict", "lbaas"])
    run("import layers", [str(BIN / "lint-imports")])
    check_module_sizes()
    check_subprocess_imports()
    check_no_mock_patch()
    run("config reference is current", [sys.executable, "tools/config_reference.py", "--check"])
    run("pytest", [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *sys.argv[1:]])


if __name__ == "__main__":
    main()
