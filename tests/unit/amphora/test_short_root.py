"""The short link an agent runs its amphorae through when its state directory is long."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lbaas.amphora.short_root import LOGS_SUFFIX, fits, link_for, links_directory, short_root
from lbaas.amphora.socket_room import HAPROXY_SOCKET_PATH_MAX, LONGEST_NAME, SAMPLE_ID
from lbaas.errors import CommandRefused


def _long(tmp_path: Path, length: int = 120) -> Path:
    path = tmp_path / ("d" * (length - len(str(tmp_path)) - 1)) / "amphorae"
    path.parent.mkdir()
    return path


def test_a_directory_that_fits_is_used_as_it_is(tmp_path: Path) -> None:
    root = Path("/tmp/s") / "amphorae"
    assert fits(root) and short_root(root, links=tmp_path / "links") == root
    assert not (tmp_path / "links").exists()


def test_a_long_directory_gets_a_private_link_with_a_stable_name(tmp_path: Path) -> None:
    real = _long(tmp_path)
    assert not fits(real)
    links = tmp_path / "links"
    link = short_root(real, links=links)
    assert link.parent == links and link.name == link_for(real, 0, {}).name
    assert link.resolve() == real.resolve() and real.is_dir()
    logs = link.with_name(link.name + LOGS_SUFFIX)
    assert logs.resolve() == real.with_name("amphorae-logs").resolve()
    assert (links.stat().st_mode & 0o777) == 0o700
    # The default places leave room: /tmp/lbaas-<uid>/<12 hex>/<uuid>/master.sock.
    longest = links_directory(4294967294, {}) / link.name / SAMPLE_ID / LONGEST_NAME
    assert len(str(longest)) <= HAPROXY_SOCKET_PATH_MAX
    # Written through the link, kept in the state directory.
    (link / "a-file").write_text("x")
    assert (real / "a-file").read_text() == "x"
    # A restart finds the same link.
    assert short_root(real, links=links) == link


def test_a_link_pointing_elsewhere_is_replaced_and_dangling_ones_removed(tmp_path: Path) -> None:
    real = _long(tmp_path)
    links = tmp_path / "links"
    links.mkdir(mode=0o700)
    name = link_for(real.absolute(), 0, {}).name
    (links / name).symlink_to(tmp_path)
    (links / "gone").symlink_to(tmp_path / "no-such-directory")
    link = short_root(real, links=links)
    assert link.resolve() == real.resolve()
    assert not (links / "gone").is_symlink()


def test_a_planted_links_directory_is_refused(tmp_path: Path) -> None:
    real = _long(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = tmp_path / "links"
    planted.symlink_to(elsewhere)
    with pytest.raises(CommandRefused, match="not a directory of this user's own"):
        short_root(real, links=planted)


def test_where_the_links_live(tmp_path: Path) -> None:
    # Never /run/lbaas itself: HAProxy's workers must cross it to /run/lbaas/access-log.
    assert links_directory(0, {"XDG_RUNTIME_DIR": str(tmp_path)}) == Path("/run/lbaas-links")
    assert links_directory(1000, {"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "lbaas-links"
    assert links_directory(1000, {"XDG_RUNTIME_DIR": "relative"}) == Path("/tmp/lbaas-links-1000")
    assert links_directory(1000, {}) == Path("/tmp/lbaas-links-1000")
    assert os.path.isabs(link_for(Path("/x/amphorae"), 1000, {}))
