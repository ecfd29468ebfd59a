"""The script that fills a lab host's mount namespace, read without running it (root)."""

from __future__ import annotations

from pathlib import Path

from lbaas.lab.base import HostFiles
from lbaas.lab.mounts import make_crossed_directory, setup_script

STAGE = Path("/run/lbaas/lab-mnt")


def _script(files: HostFiles, points: list[str]) -> list[str]:
    return setup_script(files, points, STAGE).splitlines()


def test_own_directories_come_back_above_the_covered_trees() -> None:
    own, sockets = Path("/s/labs/x/h1"), Path("/run/lbaas/lab-access-log/x/h1")
    files = HostFiles(own=(own,), crossed=(sockets,), hidden=(Path("/s/labs"),))
    lines = _script(files, ["/", "/run", "/run/netns", "/run/netns/x-h1", str(STAGE)])
    # The machine's namespaces stay peers (an agent's amphorae are the machine's).
    private = [line.split()[-1] for line in lines if "--make-private" in line]
    assert private == ["/", "/run"]
    bind = lines.index(f"mount --bind {sockets} {STAGE}/1")
    cover = lines.index("mount -t tmpfs -o mode=0755 lab-hidden /s/labs")
    back = lines.index(f"mount --move {STAGE}/1 {sockets}")
    assert bind < cover < back
    assert lines.index(f"mount --move {STAGE}/0 {own}") > cover
    # Crossable on the way to an access-log socket; /tmp a host's own, usable by all users.
    assert "umask 022" in lines
    assert "mount -t tmpfs -o mode=1777 lab-tmp /tmp" in lines
    assert lines[-1] == f"umount {STAGE}"


def test_a_crossed_directory_and_the_parents_it_makes_are_0755(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir(mode=0o700)
    made = kept / "lab" / "h1"
    make_crossed_directory(made)
    assert [p.stat().st_mode & 0o777 for p in (kept, made.parent, made)] == [0o700, 0o755, 0o755]
