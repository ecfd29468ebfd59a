"""The script that fills a lab host's mount namespace, read without running it (root)."""

from __future__ import annotations

from pathlib import Path

from lbaas.lab.base import HostFiles
from lbaas.lab.mounts import make_crossed_directory, setup_script, software_below_tmp

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


def test_software_below_tmp_comes_back_read_only_above_the_hosts_tmp() -> None:
    checkout = Path("/tmp/ci-check")
    files = HostFiles(own=(Path("/s/labs/x/h1"),), hidden=(), software=(checkout,))
    lines = _script(files, ["/", str(STAGE)])
    bind = lines.index(f"mount --bind {checkout} {STAGE}/0")
    tmp = lines.index("mount -t tmpfs -o mode=1777 lab-tmp /tmp")
    back = lines.index(f"mount --move {STAGE}/0 {checkout}")
    read_only = lines.index(f"mount -o remount,bind,ro {checkout}")
    assert bind < tmp < back < read_only < lines.index(f"umount {STAGE}")


def test_only_trees_below_tmp_count_as_hidden_software(tmp_path: Path) -> None:
    checkout = Path("/tmp") / tmp_path.name  # below /tmp whatever pytest's base is
    venv = checkout / ".venv"
    found = software_below_tmp([Path("/usr"), venv, checkout, Path("/tmp"), Path("/work/x")])
    assert found == (checkout,)


def test_a_link_below_tmp_is_software_as_named(tmp_path: Path) -> None:
    outside = tmp_path / "venv"
    outside.mkdir()
    link = Path("/tmp") / f"{tmp_path.name}-venv"
    link.symlink_to(outside)
    try:
        found = software_below_tmp([link])
    finally:
        link.unlink()
    assert link in found
