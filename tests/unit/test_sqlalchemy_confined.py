"""SQLAlchemy is imported only inside lbaas/db: every other module of lbaas/ is walked with
``ast`` and a direct ``import sqlalchemy...``/``from sqlalchemy... import`` fails the test,
naming the module.

The .importlinter contract ``sqlalchemy`` says the same; this test is the same rule in a
form that names the offending module and line in a plain pytest failure, and it looks at
every import statement, including those inside functions and ``TYPE_CHECKING`` blocks.
The checker is tested on a planted tree, so a checker that finds nothing cannot pass.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFINED_TO = "db"


def _imports_sqlalchemy(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "sqlalchemy" or a.name.startswith("sqlalchemy.") for a in node.names)
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
        return node.module == "sqlalchemy" or node.module.startswith("sqlalchemy.")
    return False


def sqlalchemy_importers(package: Path, confined_to: str = CONFINED_TO) -> list[str]:
    """``module:line`` of every direct SQLAlchemy import in ``package`` outside its
    ``confined_to`` subpackage, modules named as dotted paths (``lbaas.metrics.x``)."""
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == confined_to:
            continue
        parts = [package.name, *relative.with_suffix("").parts]
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(), filename=str(path))
        found += [f"{module}:{node.lineno}" for node in ast.walk(tree) if _imports_sqlalchemy(node)]
    return found


def test_no_module_outside_lbaas_db_imports_sqlalchemy() -> None:
    importers = sqlalchemy_importers(ROOT / "lbaas")
    assert not importers, (
        "SQLAlchemy is imported outside lbaas.db (move the statement into lbaas.db, or use "
        f"lbaas.db.session's Session/Connection for type hints): {', '.join(importers)}"
    )


def _plant(root: Path, relative: str, source: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))


def test_checker_names_each_planted_import_outside_db(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    _plant(package, "__init__.py", "")
    _plant(package, "db/engine.py", "import sqlalchemy\nfrom sqlalchemy.orm import Session\n")
    _plant(package, "db/sub/rows.py", "from sqlalchemy import select\n")
    _plant(package, "metrics/certs.py", "import json\nfrom sqlalchemy import select\n")
    _plant(package, "api/__init__.py", "import sqlalchemy.orm as orm\n")
    _plant(
        package,
        "health/late.py",
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from sqlalchemy.engine import Connection
        def f():
            import sqlalchemy
        """,
    )
    _plant(package, "clean.py", "from lbaas.db.session import Session\nimport sqlalchemyish\n")
    _plant(package, "relative.py", "from .sqlalchemy import x\n")

    assert sqlalchemy_importers(package) == [
        "pkg.api:1",
        "pkg.health.late:4",
        "pkg.health.late:6",
        "pkg.metrics.certs:2",
    ]


def test_checker_passes_a_tree_that_keeps_sqlalchemy_in_db(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    _plant(package, "db/engine.py", "from sqlalchemy import create_engine\n")
    _plant(package, "metrics/certs.py", "from pkg.db.engine import create_engine\n")

    assert sqlalchemy_importers(package) == []
