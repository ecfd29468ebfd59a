"""A rolling upgrade's pieces without root: a commit's tree from git, another tree's
settings loader asked, one role of a lab host's processes stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lbaas.lab.base import LabError
from lbaas.lab.lab import Lab
from lbaas.lab.state import StateFile, process_running
from lbaas.lab.upgrade import settings_refusal, tree_from_git
from tests.unit.lab.test_lab_plan import FakeMounts, RecordingRunner


def _git(repository: Path, *argv: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repository), *argv], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_commits_tree_is_extracted_once_and_named_by_its_full_hash(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    _git(repository, "init", "-q")
    (repository / "marker.txt").write_text("old\n")
    _git(repository, "add", "marker.txt")
    _git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old")
    old = _git(repository, "rev-parse", "HEAD")
    (repository / "marker.txt").write_text("new\n")  # the working tree moved on
    trees = tmp_path / "trees"

    tree = tree_from_git(repository, old[:7], trees=trees)

    assert tree == trees / old
    assert (tree / "marker.txt").read_text() == "old\n"
    assert tree_from_git(repository, old, trees=trees) == tree
    assert [p.name for p in trees.iterdir()] == [old]  # no partial directory left
    with pytest.raises(LabError, match="no commit"):
        tree_from_git(repository, "0" * 40, trees=trees)


def test_another_trees_settings_loader_is_the_one_asked(tmp_path: Path) -> None:
    """An older tree refuses keys it does not know: its own loader says so, by name."""
    tree = tmp_path / "old"
    (tree / "lbaas").mkdir(parents=True)
    (tree / "lbaas" / "__init__.py").write_text("")
    (tree / "lbaas" / "config.py").write_text(
        "def load_settings(path, environ):\n"
        "    if 'spare_amphorae' in path.read_text():\n"
        "        raise SystemExit('invalid settings: agent.spare_amphorae: Extra inputs')\n"
    )
    accepted, refused = tmp_path / "a.toml", tmp_path / "r.toml"
    accepted.write_text("[agent]\nmode = 'netns'\n")
    refused.write_text("[agent]\nspare_amphorae = 2\n")

    assert settings_refusal(str(tree), accepted) is None
    assert settings_refusal(str(tree), refused) == (
        "invalid settings: agent.spare_amphorae: Extra inputs"
    )


def test_stopping_one_role_leaves_the_owners_other_processes(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    lab = Lab("lab", tmp_path, mounts=FakeMounts(), run=RecordingRunner(StateFile(tmp_path, "lab")))
    lab.up(hosts=1)
    for role in ("api", "worker"):
        # A sleeper that takes SIGTERM as a request to stop, as lbaas processes do.
        sleepers.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        lab.register_process("ctl", sleepers[-1].pid, role)

    lab.stop_registered("ctl", "api", grace=5.0)
    sleepers[0].wait(timeout=5)

    assert sleepers[0].returncode is not None
    assert process_running(sleepers[1].pid)
    assert [p.role for p in lab.state().processes["ctl"]] == ["worker"]
    lab.kill_registered("ctl", "worker")
    sleepers[1].wait(timeout=5)
    assert "ctl" not in lab.state().processes
