"""A short name for the amphorae's directory, so any state directory fits HAProxy.

HAProxy takes UNIX socket paths of at most 97 bytes (``socket_room``), and each amphora's
HAProxy binds ``<amphorae>/<uuid>/master.sock``: a state directory longer than 39 bytes
leaves no room. The agent then runs its amphorae through a symbolic link with a short
name, ``<links>/<12 hex>``, pointing at the real ``<state>/amphorae``; ``<links>`` is
``/run/lbaas-links`` for root, else ``$XDG_RUNTIME_DIR/lbaas-links``, else
``/tmp/lbaas-links-<uid>``. Every
path the agent and the controller name (HAProxy's configuration, sockets and pid file,
keepalived's check, the agent's own connections) goes through the link and the kernel
resolves it, so the files stay inside the state directory; only the link lives outside.
An agent that is not root keeps its access-log sockets in ``<amphorae>-logs``, which gets
the sibling link ``<12 hex>-logs``.

The name is a hash of the real path: a restarted agent, and ``lbaas cleanup``, find the
same link, so the paths running HAProxies and stored specs hold stay valid. ``<links>``
is made 0700 and must be a real directory of the agent's own user (a link or another
user's directory planted in /tmp is refused); links there whose target is gone (a state
directory since removed) are removed when an agent makes one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from lbaas.amphora.socket_room import LONGEST_NAME, SAMPLE_ID, socket_path_problem
from lbaas.errors import CommandRefused
from lbaas.private_files import DIRECTORY_MODE, make_private_directory

LOGS_SUFFIX = "-logs"


def fits(amphora_root: Path) -> bool:
    """Whether an amphora's sockets under ``amphora_root`` fit HAProxy as they are."""
    return socket_path_problem(str(amphora_root / SAMPLE_ID / LONGEST_NAME)) is None


def links_directory(euid: int, environ: Mapping[str, str]) -> Path:
    """Where the short links of this user's agents live: a directory of their own (never
    ``/run/lbaas``, whose ``access-log`` HAProxy's workers must be able to reach)."""
    if euid == 0:
        return Path("/run/lbaas-links")
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute() and Path(runtime).is_dir():
        return Path(runtime) / "lbaas-links"
    return Path(f"/tmp/lbaas-links-{euid}")


def link_for(amphora_root: Path, euid: int, environ: Mapping[str, str]) -> Path:
    """The short link ``amphora_root`` gets (whether or not it needs one)."""
    name = hashlib.sha256(str(amphora_root).encode()).hexdigest()[:12]
    return links_directory(euid, environ) / name


def short_root(amphora_root: Path, links: Path | None = None) -> Path:
    """``amphora_root`` (absolute) when its sockets fit, else its short link, made now in
    ``links`` (``links_directory`` of this user unless given)."""
    real = amphora_root.absolute()
    if fits(real):
        return real
    euid = os.geteuid()
    link = link_for(real, euid, os.environ)
    if links is not None:
        link = links / link.name
    _private_links_directory(link.parent, euid)
    _remove_dangling(link.parent)
    logs = real.with_name(real.name + LOGS_SUFFIX)
    for target, name in ((real, link.name), (logs, link.name + LOGS_SUFFIX)):
        make_private_directory(target)
        _point(link.parent / name, target)
    return link


def _private_links_directory(directory: Path, euid: int) -> None:
    """Make ``directory`` (0700), whose parent exists; refuse one not of ``euid``'s own."""
    try:
        directory.mkdir(mode=DIRECTORY_MODE)
    except FileExistsError:
        pass
    seen = os.lstat(directory)
    if not stat.S_ISDIR(seen.st_mode) or seen.st_uid != euid:
        raise CommandRefused(
            f"{directory} is not a directory of this user's own: the agent keeps the short "
            "links of its amphorae there (its state directory is too long for HAProxy's "
            "socket paths); remove it, or use a state directory of at most 39 bytes"
        )
    if stat.S_IMODE(seen.st_mode) != DIRECTORY_MODE:
        os.chmod(directory, DIRECTORY_MODE)


def _remove_dangling(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_symlink() and not entry.exists():
            entry.unlink(missing_ok=True)


def _point(link: Path, target: Path) -> None:
    """Make ``link`` a symbolic link to ``target``, replacing any other link there."""
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    fresh = link.with_name(f".{link.name}.new")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(target)
    os.replace(fresh, link)
