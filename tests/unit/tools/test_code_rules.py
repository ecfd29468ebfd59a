"""The AST rules of tools/check.py: each evasion of a rule is caught, honest code passes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.code_rules import (
    find_long_functions,
    find_patching,
    find_status_literals,
    status_values,
)

ROOT = Path(__file__).resolve().parents[3]


def patching(source: str) -> list[int]:
    return [finding.line for finding in find_patching(textwrap.dedent(source))]


PATCHING = {
    "mock.patch decorator": """
        from unittest import mock
        @mock.patch("lbaas.db.engine.create_engine")
        def test(): ...
    """,
    "patch imported under another name": """
        from unittest.mock import patch as swap
        with swap("lbaas.config.load_settings"): ...
    """,
    "patch reached through the unittest package": """
        import unittest
        unittest.mock.patch("lbaas.cli.main").start()
    """,
    "patch aliased by assignment": """
        import unittest.mock as um
        p = um.patch
        p("lbaas.cli.main")
    """,
    "patch with a computed target": """
        from unittest.mock import patch
        name = "lb" + "aas.cli.main"
        patch(name)
    """,
    "patch.object on a project class": """
        from unittest.mock import patch
        from lbaas.db.engine import Database
        patch.object(Database, "session")
    """,
    "patch.object on a project module under an alias": """
        from unittest import mock
        import lbaas.config as cfg
        mock.patch.object(cfg, "load_settings")
    """,
    "patch.dict of a project mapping": """
        from unittest.mock import patch
        from lbaas.model import enums
        patch.dict(enums.LISTENER_POOL_COMPATIBILITY, {})
    """,
    "patch.dict of sys.modules": """
        import sys
        from unittest.mock import patch
        patch.dict(sys.modules["lbaas.cli"].__dict__, {})
    """,
    "monkeypatch.setattr on a project module": """
        from lbaas import config
        def test(monkeypatch):
            monkeypatch.setattr(config, "load_settings", lambda: None)
    """,
    "monkeypatch.setattr with a dotted string": """
        def test(mp):
            mp.setattr("lbaas.config.load_settings", lambda: None)
    """,
    "monkeypatch.setattr on an object a project class made": """
        from lbaas.fleet.agent_service import AgentService
        def test(monkeypatch):
            service = AgentService()
            monkeypatch.setattr(service, "run", lambda: None)
    """,
    "monkeypatch.setitem into a project dict": """
        from lbaas.model.enums import POOL_HEALTH_MONITOR_TYPES
        def test(monkeypatch):
            monkeypatch.setitem(POOL_HEALTH_MONITOR_TYPES, "X", 1)
    """,
    "builtin setattr on a project class": """
        from lbaas.db.engine import Database
        setattr(Database, "session", None)
    """,
    "object.__setattr__ on a project module": """
        import lbaas.config
        object.__setattr__(lbaas.config, "x", 1)
    """,
    "assignment to a project module attribute": """
        import lbaas.network.allocation
        lbaas.network.allocation.allocate_vip = None
    """,
    "assignment through a module alias": """
        from lbaas.network import allocation
        alloc = allocation
        alloc.allocate_vip = None
    """,
    "augmented assignment and delete on a project class": """
        from lbaas.db.engine import Database
        Database.retries += 1
        del Database.session
    """,
    "assignment into a module namespace": """
        from lbaas import config
        vars(config)["load_settings"] = None
        config.__dict__["x"] = 1
    """,
    "sys.modules replacement": """
        import sys
        sys.modules["lbaas.config"] = object()
    """,
    "module fetched by importlib": """
        import importlib
        mod = importlib.import_module("lbaas.config")
        mod.load_settings = None
    """,
}


@pytest.mark.parametrize("source", PATCHING.values(), ids=PATCHING.keys())
def test_each_way_of_patching_project_code_is_caught(source: str) -> None:
    assert patching(source), "the rule missed it"


def test_every_patch_of_a_snippet_is_reported_with_its_line() -> None:
    assert patching(PATCHING["augmented assignment and delete on a project class"]) == [3, 4]


HONEST = {
    "a fake handed in through the constructor": """
        from lbaas.jobs.worker import Worker
        from tests.support.fake_providers import RecordingProvider
        worker = Worker(provider=RecordingProvider())
        worker.name = "w1"
    """,
    "patching the standard library or a third-party object": """
        import time
        from unittest.mock import patch
        def test(monkeypatch, database):
            monkeypatch.setattr(time, "monotonic", lambda: 0.0)
            monkeypatch.setattr(database.engine.dialect, "do_ping", lambda c: True)
            monkeypatch.setenv("LBAAS_DATABASE_URL", "sqlite://")
            with patch("os.getpid", return_value=1): ...
    """,
    "attributes of plain test objects and tuples of project values": """
        from types import SimpleNamespace
        from lbaas.model.enums import ProvisioningStatus
        row = SimpleNamespace()
        row.status = ProvisioningStatus.ACTIVE
        setattr(row, "name", "x")
    """,
}


@pytest.mark.parametrize("source", HONEST.values(), ids=HONEST.keys())
def test_honest_code_passes(source: str) -> None:
    assert patching(source) == []


def test_the_test_suite_patches_no_project_code() -> None:
    found = [
        str(finding)
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for finding in find_patching(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == []


def test_functions_over_the_limit_are_reported_with_their_length() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    source = f"def short():\n    pass\n\n\nasync def long():\n{body}\n    return 1\n"
    found = find_long_functions(source, "m.py", limit=60)
    assert [(f.line, f.message) for f in found] == [(5, "long is 62 lines")]
    assert find_long_functions(source, "m.py", limit=62) == []


def test_nested_functions_count_on_their_own_and_in_their_parent() -> None:
    inner = "\n".join(f"            y{i} = {i}" for i in range(5))
    source = (
        f"class C:\n    def outer(self):\n        def inner():\n{inner}\n        return inner\n"
    )
    names = [f.message.split()[0] for f in find_long_functions(source, limit=4)]
    assert names == ["outer", "inner"]


STATUSES = status_values((ROOT / "lbaas/model/enums.py").read_text())


def literals(source: str) -> list[str]:
    return [f.message for f in find_status_literals(textwrap.dedent(source), STATUSES)]


def test_status_values_come_from_the_three_status_enums() -> None:
    assert {"ACTIVE", "PENDING_DELETE", "ONLINE", "NO_MONITOR", "BOOTING", "ALLOCATED"} <= STATUSES
    assert "HTTP" not in STATUSES and "ROUND_ROBIN" not in STATUSES


def test_status_literals_in_code_are_caught() -> None:
    source = """
        GONE = ("DELETED", "PENDING_DELETE")
        def f(lb, q):
            if lb.provisioning_status == "ACTIVE":
                lb.operating_status = "ONLINE"
            q.where(lbs.c.status.in_(["ERROR"]))
            return {"status": "BOOTING"}
    """
    assert literals(source) == [
        "status literal 'DELETED'",
        "status literal 'PENDING_DELETE'",
        "status literal 'ACTIVE'",
        "status literal 'ONLINE'",
        "status literal 'ERROR'",
        "status literal 'BOOTING'",
    ]


def test_docstrings_log_text_fstrings_and_sql_pass() -> None:
    source = '''
        """Marks a load balancer ACTIVE."""
        import logging
        log = logging.getLogger(__name__)
        class C:
            """ACTIVE"""
            def f(self, status):
                """ERROR"""
                log.info("ACTIVE")
                log.warning("%s went %s", "lb", "ERROR")
                sql = "UPDATE lbs SET status = 'ACTIVE' WHERE status = 'PENDING_UPDATE'"
                return f"{status}: ACTIVE", ProvisioningStatus.ACTIVE, "HTTP"
    '''
    assert literals(source) == []
