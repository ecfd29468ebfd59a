"""``lbaas lab exec`` refuses what it cannot run, before running anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.cli import build_parser
from lbaas.lab import processes
from lbaas.lab.base import LabError
from lbaas.lab.command import run
from lbaas.lab.state import LabState, StateFile


def _exec(tmp_path: Path, *argv: str) -> int:
    args = build_parser().parse_args(["lab", "exec", "--name", "lab", *argv])
    return run(args, tmp_path)


def test_exec_needs_a_lab_that_is_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exec(tmp_path, "ctl", "--", "true") == 1
    assert "not up" in capsys.readouterr().err


def test_exec_names_the_nodes_it_knows_and_wants_a_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    StateFile(tmp_path, "lab").save(LabState("lab", 2, 1, {}, [], complete=True))
    assert _exec(tmp_path, "h3", "--", "true") == 1
    assert "ctl, cli, rtr, h1, h2" in capsys.readouterr().err
    assert _exec(tmp_path, "ctl", "--") == 1
    assert "no command" in capsys.readouterr().err


def test_a_command_in_a_namespace_that_is_not_there_is_the_labs_error() -> None:
    with pytest.raises(LabError, match="failed"):
        processes.run_to_end("lbaas-no-such-namespace", ["true"], timeout=30)
