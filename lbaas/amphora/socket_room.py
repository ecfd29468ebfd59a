"""Whether HAProxy's UNIX sockets fit under the agent's directories.

HAProxy refuses a UNIX socket path longer than 97 bytes (``socket path '…' too long (max
97)``, at its configuration's parse): ``sun_path`` holds 107 bytes and a NUL, and HAProxy
keeps room for the ``.<pid>.tmp`` name it binds before renaming the socket into place.
Each amphora's HAProxy binds ``<amphorae>/<id>/master.sock`` (its master CLI) and
``<amphorae>/<id>/stats.sock`` (its runtime API), and sends its access log to
``<socket directory>/<id>.sock``; the controller names amphorae by UUID (36 characters).
So the state directory's length bounds them all: 39 bytes with the default layout; a
longer one is reached through a short link (``short_root``). When even that leaves no
room (a root agent's ``access_log.socket_directory`` set too long, a very long
``$XDG_RUNTIME_DIR``), the agent refuses to start, naming the limit and the path that
does not fit (``check_socket_room``), rather than put every amphora in ERROR with
HAProxy's message about one path.
"""

from __future__ import annotations

from pathlib import Path

from lbaas.errors import CommandRefused

#: The longest UNIX socket path HAProxy accepts (2.6: ``max_path_len`` in str2sa_range).
HAPROXY_SOCKET_PATH_MAX = 97
#: The longest socket name inside an amphora's directory.
LONGEST_NAME = "master.sock"
#: An amphora id as the controller makes them (a UUID), to measure paths with.
SAMPLE_ID = "00000000-0000-0000-0000-000000000000"


def socket_path_problem(path: str) -> str | None:
    """Why HAProxy would refuse ``path`` as a UNIX socket, or None when it fits."""
    size = len(path.encode())
    if size <= HAPROXY_SOCKET_PATH_MAX:
        return None
    return (
        f"the UNIX socket path {path} is {size} bytes, "
        f"and HAProxy takes at most {HAPROXY_SOCKET_PATH_MAX}"
    )


def check_socket_room(state_dir: Path, amphora_root: Path, log_sockets: Path) -> None:
    """Refuse (CommandRefused) directories that leave an amphora's sockets too long.

    ``amphora_root`` holds one directory per amphora (the state directory's, or its
    short link), ``log_sockets`` the access-log sockets; both measured with a UUID id."""
    master = amphora_root.absolute() / SAMPLE_ID / LONGEST_NAME
    problem = socket_path_problem(str(master))
    if problem is not None:
        raise CommandRefused(
            f"the amphorae of state directory {state_dir.absolute()} cannot run: {problem} "
            f"(an amphora's master socket, under {amphora_root})"
        )
    logs = log_sockets.absolute() / f"{SAMPLE_ID}.sock"
    problem = socket_path_problem(str(logs))
    if problem is not None:
        raise CommandRefused(
            f"access-log socket directory {log_sockets} is too long for HAProxy: {problem} "
            "(an amphora's access-log socket); set a shorter access_log.socket_directory"
        )
