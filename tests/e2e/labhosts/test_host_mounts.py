"""Lab hosts share the network and nothing else: each has its own files (issue 29.1).

A lab is built (namespaces only, no services) and short processes are started on its hosts
as the lab starts an agent (``processes.start``): what host h1 writes in its state
directory, its /tmp and root's short links' directory is seen by neither h2 nor the
control-plane host, while the lab itself (the operator, outside every host) still reads
h1's directory; an unprivileged user on h1 (as HAProxy's workers are) reaches h1's
access-log socket directory; and a namespace h1 adds for an amphora reaches the machine's
/run/netns, where ``lab down`` finds and removes it.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.lab import processes
from lbaas.lab.lab import Lab
from lbaas.lab.mounts import MOUNT_NAMESPACES
from lbaas.lab.state import process_running

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    if os.geteuid() != 0:
        pytest.skip("namespaces need root")
    built = Lab(f"m{uuid.uuid4().hex[:7]}", tmp_path)
    with built.running(hosts=2):
        yield built
    assert not any(built.names.is_ours(name) for name in _netns_names())
    assert not any(built.names.is_ours(p.name) for p in MOUNT_NAMESPACES.iterdir())


def _netns_names() -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in listing.stdout.splitlines() if line]


def _on_host(lab: Lab, namespace: str, script: str) -> str:
    """Run ``script`` as a process of host ``namespace``; what it printed."""
    own = lab.host_files(namespace).own
    directory = own[0] if own else lab.services_dir
    log = directory / f"probe-{uuid.uuid4().hex[:6]}.log"
    pid = processes.start(namespace, ["sh", "-c", script], log, directory)
    deadline = time.monotonic() + 60
    while process_running(pid):
        assert time.monotonic() < deadline, f"probe on {namespace} did not end"
        time.sleep(0.05)
    return log.read_text()


def _sees(lab: Lab, namespace: str, path: Path) -> str:
    return _on_host(lab, namespace, f"test -e {path} && echo seen || echo hidden").strip()


@pytest.mark.timeout(300)
def test_a_file_of_one_host_is_not_visible_on_another(lab: Lab) -> None:
    h1, h2, ctl = lab.names.host(1), lab.names.host(2), lab.names.control
    state_file = lab.services_dir / "h1" / "written-by-h1"
    scratch = Path("/tmp") / f"written-by-h1-{uuid.uuid4().hex[:6]}"
    link = Path("/run/lbaas-links") / f"h1-{uuid.uuid4().hex[:6]}"  # an agent's short link
    script = f"echo h1 > {state_file} && echo h1 > {scratch} && ln -s {state_file} {link}"
    assert _on_host(lab, h1, f"{script} && echo ok").strip() == "ok"

    for path in (state_file, scratch, link):
        assert _sees(lab, h1, path) == "seen"
        for other in (h2, ctl):
            assert _sees(lab, other, path) == "hidden", f"{path} on {other}"
    # The operator outside the hosts reads h1's directory; h1's /tmp and links its own.
    assert state_file.read_text() == "h1\n"
    assert not scratch.exists() and not link.is_symlink()


@pytest.mark.timeout(300)
def test_an_unprivileged_process_reaches_its_hosts_access_log_sockets(lab: Lab) -> None:
    sockets = lab.names.log_sockets / "h1"
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    probe = f"{' '.join(nobody)} test -x {sockets} && echo crossed || echo refused"
    assert _on_host(lab, lab.names.host(1), probe).strip() == "crossed"
    assert _sees(lab, lab.names.host(2), sockets) == "hidden"


@pytest.mark.timeout(300)
def test_a_namespace_a_host_adds_is_the_machines(lab: Lab) -> None:
    amphora = f"{lab.names.host_prefix(1)}amp-probe"
    added = _on_host(lab, lab.names.host(1), f"ip netns add {amphora} && echo ok")
    assert added.strip() == "ok"
    assert amphora in _netns_names()
    # h2 sees it too (a host's amphorae are the machine's namespaces, as on a real host
    # they would be its own: lab down must find them).
    assert _sees(lab, lab.names.host(2), Path("/run/netns") / amphora) == "seen"
