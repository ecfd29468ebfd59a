"""No Core statement names a bind parameter after a column it might also set.

SQLAlchemy turns every execution parameter whose name is a column of the table an UPDATE
or INSERT targets into a value for that column, and refuses to compile the statement
when a ``bindparam`` of the same name is used elsewhere in it. The health manager's
status UPDATE once used ``value``, a column of ``l7rules`` only, so it failed on exactly
the load balancers that had an L7 rule. This scan finds such names in all of ``lbaas``;
the few that are safe are listed with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

from lbaas.db.tables import Base

LBAAS = Path(__file__).resolve().parents[2] / "lbaas"

SAFE = {
    "flavor_id": "only in a SELECT (graph_loader's flavor data)",
    "rebuild": "the value of converge_jobs.rebuild itself, in the INSERT that sets it",
}


def _column_names() -> dict[str, set[str]]:
    columns: dict[str, set[str]] = {}
    for table in Base.metadata.tables.values():
        for column in table.columns:
            columns.setdefault(column.key, set()).add(table.name)
    return columns


def _bind_names() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(LBAAS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "bindparam"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((str(path.relative_to(LBAAS.parent)), node.lineno, node.args[0].value))
    return found


def test_no_bind_parameter_is_named_after_a_column() -> None:
    columns = _column_names()
    binds = _bind_names()
    assert binds, "the scan found no bindparam at all: it is looking in the wrong place"
    clashes = [
        f"{path}:{line}: bindparam({name!r}) is a column of {sorted(columns[name])}"
        for path, line, name in binds
        if name in columns and name not in SAFE
    ]
    assert clashes == []
