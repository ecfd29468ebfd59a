"""A rolling upgrade in the lab: processes of one deployment running different commits.

A *code tree* is a commit's source, extracted from git (``tree_from_git``) into
``/var/tmp/lbaas-lab-trees/<commit>``: not below /tmp, which each lab host's mount
namespace replaces with a tmpfs of its own (``lbaas.lab.mounts``). The lab's processes run
``python -m lbaas.cli`` with this interpreter; PYTHONPATH naming a tree makes them run that
tree's code with the same virtual environment (the upgrade's commits must share their
dependencies). Which tree each process runs is recorded in the lab's state
(``LabState.code``), so ``agent-restart`` and the steps here start it again from the same.

An upgrade step (``restart_with_code``) stops one process as a service manager does
(SIGTERM, SIGKILL after a grace), records its new tree, starts it and waits until it
serves: an agent or an api until its port accepts, a worker or health until it has run
for a few seconds without dying. ``upgrade_schema`` runs a tree's ``lbaas db upgrade``.

Before an agent is stopped, the new tree's access-log socket keeper is started in its
host taking the running agent's sockets over (``lbaas agent log-keeper``,
``lbaas.amphora.socket_keeper``): the agent being replaced may be of a release without
one, and while no agent listens its HAProxies' log forwarders would reconnect without
pause. The new agent takes the listeners from it. It is registered as the host's
``log-keeper``, so losing or removing the host kills it as it does the agent.

Settings: the lab writes its settings files with this code, and an older tree's loader
refuses keys it does not know (``extra="forbid"``); ``settings_refusal`` asks the tree's
own loader before a process is started from it, so a refusal is named, not a silent
start-up failure.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lbaas.host.base import CommandResult, HostCommandFailed
from lbaas.host.commands import run_command
from lbaas.lab import names as n
from lbaas.lab import processes
from lbaas.lab.arguments import STOP_GRACE
from lbaas.lab.base import LabError
from lbaas.lab.lab import Lab
from lbaas.lab.services import (
    AGENT_PART,
    API_PORT,
    CONTROL_PARTS,
    SETTINGS_FILE,
    code_key,
    control_dir,
    host_id,
    lbaas_command,
    start_agent,
    start_control_part,
)
from lbaas.lab.state import process_running

#: Where commits' trees are extracted: seen by every lab host (not /tmp, theirs is private).
TREES = Path("/var/tmp/lbaas-lab-trees")
#: A worker or health process that lives this long after its start is taken as started.
SETTLE = 3.0
_START_TIMEOUT = 60.0

#: The take-over keeper's role among a host's processes, and its log in the host's directory.
KEEPER_ROLE = "log-keeper"
KEEPER_LOG = "log-keeper.log"
#: What the keeper logs once it holds the sockets and answers (``SocketKeeper.serve``), or
#: finding one that does (a step run again).
_KEEPER_READY = (b"ready on", b"already answers")
_POLL = 0.1

#: ``run_command``'s shape: argv, then ``timeout`` by keyword.
Run = Callable[..., CommandResult]

_LOAD_SETTINGS = "import sys; from pathlib import Path; from lbaas.config import load_settings; "
_LOAD_SETTINGS += "load_settings(Path(sys.argv[1]), environ={})"


def tree_from_git(
    repository: Path, commit: str, run: Run = run_command, trees: Path = TREES
) -> Path:
    """``commit``'s tree of ``repository`` (its full hash's directory below ``trees``),
    extracted once (``git archive``, then renamed into place: never half there)."""
    resolved = run(["git", "-C", str(repository), "rev-parse", "--verify", f"{commit}^{{commit}}"])
    if resolved.returncode != 0:
        raise LabError(f"no commit {commit!r} in {repository}: {resolved.stderr.strip()}")
    full = resolved.stdout.strip()
    tree = trees / full
    if tree.is_dir():
        return tree
    partial = trees / f".{full}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = partial / "tree.tar"
    for argv in (
        ["git", "-C", str(repository), "archive", f"--output={archive}", full],
        ["tar", "-x", "-f", str(archive), "-C", str(partial)],
    ):
        done = run(argv, timeout=120.0)
        if done.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    archive.unlink()
    partial.rename(tree)
    return tree


def settings_refusal(tree: str, settings_file: Path, run: Run = run_command) -> str | None:
    """Why ``tree``'s settings loader refuses ``settings_file`` (None: it accepts it)."""
    argv = ["env", f"PYTHONPATH={tree}"] if tree else []
    argv += [sys.executable, "-c", _LOAD_SETTINGS, str(settings_file)]
    # In the tree: ``-c`` puts the working directory ahead of PYTHONPATH.
    try:
        done = run(argv, timeout=60.0, cwd=Path(tree) if tree else None)
    except HostCommandFailed as exc:  # no such tree, say
        raise LabError(f"cannot ask {tree or 'this code'}'s settings loader: {exc}") from exc
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or ["(no message)"])[-1]


def _settings_file(lab: Lab, owner: str) -> Path:
    if owner.startswith("h"):
        return lab.services_dir / owner / SETTINGS_FILE
    return control_dir(lab, n.control_index(owner)) / SETTINGS_FILE


@dataclass(frozen=True)
class Restart:
    """One process restarted: seconds to stop the old one and to serve with the new."""

    stop_s: float
    start_s: float


def restart_with_code(
    lab: Lab, owner: str, part: str, tree: str, *, grace: float = STOP_GRACE
) -> Restart:
    """Stop ``owner``'s ``part`` (host "hN" and "agent", or "ctlK" and api, worker or
    health; SIGTERM, SIGKILL after ``grace`` s, at once when 0), start it from ``tree``
    ("": this code) and wait until it serves. LabError when the tree refuses the
    settings or the process does not come up (its log's tail)."""
    _check_part(lab, owner, part)
    refusal = settings_refusal(tree, _settings_file(lab, owner))
    if refusal is not None:
        raise LabError(f"{tree or 'this code'} refuses {owner}'s settings: {refusal}")
    started = time.monotonic()
    if part == AGENT_PART:
        _take_over_log_sockets(lab, owner, tree)
    if grace > 0:
        lab.stop_registered(owner, part, grace)
    else:
        lab.kill_registered(owner, part)
    stopped = time.monotonic()
    state = lab.state()
    state.code[code_key(owner, part)] = tree
    lab.save(state)
    if part == AGENT_PART:
        start_agent(lab, owner)
    else:
        _start_control_part(lab, n.control_index(owner), part)
    return Restart(stopped - started, time.monotonic() - stopped)


def _take_over_log_sockets(lab: Lab, owner: str, tree: str) -> None:
    """Start ``tree``'s socket keeper in host ``owner``, taking over its agent's access-log
    sockets, and wait until it holds them (a tree without a keeper: nothing to do)."""
    code = Path(tree) if tree else Path(__file__).resolve().parents[2]
    if not (code / "lbaas" / "amphora" / "socket_keeper.py").is_file():
        return
    agent_dir = lab.services_dir / owner
    log = agent_dir / KEEPER_LOG
    seen = log.stat().st_size if log.exists() else 0
    argv = lbaas_command(agent_dir / SETTINGS_FILE, AGENT_PART, "log-keeper")
    env = processes.code_environment(tree)
    namespace = lab.names.host(lab.host_index(owner))
    pid = processes.start(namespace, argv, log, agent_dir, env)
    lab.register_process(owner, pid, KEEPER_ROLE)
    deadline = time.monotonic() + _START_TIMEOUT
    while not any(word in log.read_bytes()[seen:] for word in _KEEPER_READY):
        if not process_running(pid) or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise LabError(f"{owner}'s log keeper did not start; {log}:\n{tail}")
        time.sleep(_POLL)


def _check_part(lab: Lab, owner: str, part: str) -> None:
    index = n.control_index(owner)
    if index:
        if not 1 <= index <= lab.state().control or part not in CONTROL_PARTS:
            raise LabError(f"no {part!r} on control host {owner!r} (parts: {CONTROL_PARTS})")
    elif part != AGENT_PART:
        raise LabError(f"host {owner!r} runs an {AGENT_PART!r}, not {part!r}")
    else:
        lab.host_index(owner)  # LabError when there is no such host


def _start_control_part(lab: Lab, index: int, part: str) -> None:
    start_control_part(lab, index, part)
    namespace = lab.names.control_host(index)
    log = control_dir(lab, index) / f"{part}.log"
    if part == "api":
        processes.wait_listening(namespace, "127.0.0.1", API_PORT, log, _START_TIMEOUT)
        return
    owner = n.control_name(index)
    time.sleep(SETTLE)
    running = [p for p in lab.state().processes.get(owner, []) if p.role == part]
    if not running or not all(process_running(p.pid) for p in running):
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise LabError(f"{owner}'s {part} died after its start; {log}:\n{tail}")


def upgrade_schema(lab: Lab, tree: str, options: Sequence[str] = ()) -> float:
    """``lbaas db upgrade [options]`` from ``tree`` ("": this code), run in control host
    1 (the schema is every control host's); seconds it took."""
    argv = lbaas_command(control_dir(lab, 1) / SETTINGS_FILE, "db", "upgrade", *options)
    started = time.monotonic()
    processes.run_to_end(
        lab.names.control, argv, timeout=300.0, env=processes.code_environment(tree)
    )
    return time.monotonic() - started


def processes_in_order(lab: Lab) -> list[tuple[str, str]]:
    """Every (owner, part) of the lab's services in a rolling upgrade's order: each
    host's agent, then each control host's api, worker and health."""
    state = lab.state()
    agents = [(host_id(i), AGENT_PART) for i in range(1, state.hosts + 1)]
    controls = [
        (n.control_name(i), part) for i in range(1, state.control + 1) for part in CONTROL_PARTS
    ]
    return agents + controls
