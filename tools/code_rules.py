"""The code rules tools/check.py enforces that no linter covers, read from the syntax tree.

Text searches are easy to evade (``from unittest.mock import patch as p``, a module alias,
``setattr``), so each rule parses the source with :mod:`ast` and looks at what the code does:

- ``find_patching``: a test replaces part of the project's own code at run time
  (``mock.patch``/``patch.object``/``patch.dict`` under any name, ``monkeypatch.setattr`` or
  ``setattr`` on a project module, class or object, assigning to an attribute of an imported
  project module or class, writing into its ``__dict__``/``vars()`` or ``sys.modules``).
  Tests hand fakes in through constructors instead.
- ``find_long_functions``: a function body longer than the limit (60 lines in lbaas/).
- ``find_status_literals``: a string constant spelling a provisioning, operating or amphora
  status outside ``lbaas/model/enums.py``. Docstrings, f-string text and log calls are not
  code that compares or stores a status, and SQL/DDL text is never exactly one status word,
  so exact equality of the whole constant keeps those out.

Each function takes source text, so tests/unit/tools feeds it small snippets.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PROJECT = "lbaas"
MOCK_MODULES = ("unittest.mock", "mock")
PATCHERS = frozenset(
    f"{module}.{name}"
    for module in MOCK_MODULES
    for name in ("patch", "patch.object", "patch.dict", "patch.multiple")
)
SETATTR_METHODS = frozenset({"setattr", "delattr", "setitem", "delitem"})
LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
)
STATUS_ENUMS = ("ProvisioningStatus", "OperatingStatus", "AmphoraStatus")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything that is not a plain name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _is_project(qualified: str | None) -> bool:
    return qualified is not None and (qualified == PROJECT or qualified.startswith(PROJECT + "."))


def _imported_module(call: ast.Call) -> str | None:
    """The module named by ``importlib.import_module("x")`` / ``__import__("x")``."""
    chain = _dotted(call.func)
    if chain not in (["importlib", "import_module"], ["import_module"], ["__import__"]):
        return None
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


class _Names:
    """What each name of a module stands for: an import, or an alias of one.

    Flow-insensitive on purpose: a name bound to a project module anywhere in the file
    counts everywhere, which errs on the side of reporting.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.bound: dict[str, str] = {}
        self.instances: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.bound[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.bound[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for _ in range(3):  # aliases of aliases
            for node in ast.walk(tree):
                value, targets = _assigned(node)
                if value is None:
                    continue
                for target in targets:
                    if not isinstance(target, ast.Name):
                        continue
                    resolved = self.resolve(value)
                    if resolved is not None:
                        self.bound.setdefault(target.id, resolved)
                    elif isinstance(value, ast.Call):
                        module = _imported_module(value)
                        if module is not None:
                            self.bound.setdefault(target.id, module)
                        elif _is_project(self.resolve(value.func)):
                            self.instances.add(target.id)

    def resolve(self, node: ast.expr) -> str | None:
        """The fully qualified name an expression refers to, when it is an import's chain."""
        chain = _dotted(node)
        if chain is None or chain[0] not in self.bound:
            return None
        return ".".join([self.bound[chain[0]], *chain[1:]])

    def is_project_object(self, node: ast.expr) -> bool:
        """A project module, class or function, or an object a project callable made."""
        if _is_project(self.resolve(node)):
            return True
        chain = _dotted(node)
        if chain is not None and chain[0] in self.instances:
            return True
        if isinstance(node, ast.Call):
            return _is_project(self.resolve(node.func)) or _is_project(_imported_module(node))
        return False


def _assigned(node: ast.AST) -> tuple[ast.expr | None, list[ast.expr]]:
    if isinstance(node, ast.Assign):
        return node.value, list(node.targets)
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return node.value, [node.target]
    if isinstance(node, ast.NamedExpr):
        return node.value, [node.target]
    return None, []


def _names_project_string(node: ast.expr) -> bool:
    """A string naming a project object: ``"lbaas.x.y"``, or one built at run time."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and _is_project(node.value)
    if isinstance(node, ast.JoinedStr | ast.BinOp):
        return True  # a computed target cannot be shown to be outside the project
    return False


def _patch_target_is_project(names: _Names, kind: str, call: ast.Call) -> bool:
    target = call.args[0] if call.args else None
    if target is None:
        keywords = {k.arg: k.value for k in call.keywords}
        target = keywords.get("target") or keywords.get("in_dict")
    if target is None:
        return True
    if isinstance(target, ast.Constant):
        return _names_project_string(target)
    if kind.endswith(".dict") and isinstance(target, ast.Subscript):
        return names.resolve(target.value) in ("sys.modules",) or names.is_project_object(
            target.value
        )
    # A variable or expression: only an import we can see to be foreign passes.
    resolved = names.resolve(target)
    return resolved is None or _is_project(resolved) or names.is_project_object(target)


def _patched_container(names: _Names, target: ast.expr) -> bool:
    """``mod.__dict__[k] = v``, ``vars(mod)[k] = v`` or ``sys.modules["lbaas.x"] = v``."""
    if not isinstance(target, ast.Subscript):
        return False
    holder = target.value
    if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
        return names.is_project_object(holder.value)
    if isinstance(holder, ast.Call) and _dotted(holder.func) == ["vars"] and holder.args:
        return names.is_project_object(holder.args[0])
    if names.resolve(holder) == "sys.modules":
        return _names_project_string(target.slice) or not isinstance(target.slice, ast.Constant)
    return False


def _setattr_target(call: ast.Call) -> ast.expr | None:
    """What ``setattr``/``monkeypatch.setattr``/``setitem``/``x.__setattr__`` writes into."""
    func, first = call.func, (call.args[0] if call.args else None)
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr"):
        return first
    if isinstance(func, ast.Attribute):
        if func.attr in SETATTR_METHODS:
            return first
        if func.attr == "__setattr__":
            return first if _dotted(func.value) in (["object"], ["type"]) else func.value
    return None


def find_patching(source: str, path: str = "<snippet>") -> list[Finding]:
    """Every place the source replaces project code at run time."""
    tree = ast.parse(source, path)
    names = _Names(tree)
    found: list[Finding] = []

    def report(node: ast.AST, message: str) -> None:
        found.append(Finding(path, getattr(node, "lineno", 0), message))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            kind = names.resolve(node.func)
            if kind in PATCHERS and _patch_target_is_project(names, kind, node):
                report(node, f"{kind} of project code (pass a fake in instead)")
            written = _setattr_target(node)
            if written is not None and (
                _names_project_string(written) or names.is_project_object(written)
            ):
                report(node, f"{ast.unparse(node.func)} on project code (pass a fake in instead)")
        _, targets = _assigned(node)
        if isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            if isinstance(target, ast.Attribute) and _is_project(names.resolve(target.value)):
                report(target, f"assigns to {names.resolve(target)} (pass a fake in instead)")
            elif _patched_container(names, target):
                report(target, "writes into a project module's namespace (pass a fake in)")
    found.sort(key=lambda f: f.line)
    return found


def find_long_functions(source: str, path: str = "<snippet>", limit: int = 60) -> list[Finding]:
    """Functions (methods, nested ones) whose ``def`` to last line exceeds ``limit`` lines."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append(Finding(path, node.lineno, f"{node.name} is {length} lines"))
    return sorted(found, key=lambda f: f.line)


def status_values(enums_source: str) -> frozenset[str]:
    """The string values of the status enums, read from lbaas/model/enums.py's source."""
    values: set[str] = set()
    for node in ast.parse(enums_source).body:
        if isinstance(node, ast.ClassDef) and node.name in STATUS_ENUMS:
            for statement in node.body:
                value, _ = _assigned(statement)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    values.add(value.value)
    return frozenset(values)


def _exempt_constants(tree: ast.Module) -> Iterator[ast.AST]:
    """Constants that are text rather than a status value: docstrings, f-strings, log calls."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                yield body[0].value
        elif isinstance(node, ast.JoinedStr):
            yield from ast.walk(node)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS:
                for arg in node.args:
                    yield from ast.walk(arg)


def find_status_literals(
    source: str, values: Iterable[str], path: str = "<snippet>"
) -> list[Finding]:
    """String constants equal to a status value, used as code (compared, stored, passed)."""
    tree = ast.parse(source, path)
    wanted = frozenset(values)
    exempt = {id(node) for node in _exempt_constants(tree)}
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in wanted
            and id(node) not in exempt
        ):
            found.append(Finding(path, node.lineno, f"status literal {node.value!r}"))
    return sorted(found, key=lambda f: f.line)


def scan(files: Iterable[Path], root: Path, rule: str, **options: object) -> list[Finding]:
    """Run one rule over files, naming them relative to ``root``."""
    found: list[Finding] = []
    for file in files:
        source, rel = file.read_text(), str(file.relative_to(root))
        if rule == "patching":
            found += find_patching(source, rel)
        elif rule == "length":
            found += find_long_functions(source, rel, **options)  # type: ignore[arg-type]
        elif rule == "status":
            found += find_status_literals(source, options["values"], rel)  # type: ignore[arg-type]
        else:
            raise ValueError(rule)
    return found
