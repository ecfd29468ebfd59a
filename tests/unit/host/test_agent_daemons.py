"""The agent's daemons: their orphans are reaped, nobody else's exit status is stolen.

Run in a child Python process, because becoming a child subreaper is for the life of a
process and the test runner must not adopt other tests' orphans. The daemon is a shell
that starts a background process and then becomes ``sleep``; killing the daemon orphans
the background process, which comes to the subreaper. Ended, it is a zombie until someone
reaps it: the daemon registry must, while a zombie of an ordinary ``subprocess`` child
of the same process keeps its exit status for ``wait``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import json, os, signal, subprocess, sys, time
from pathlib import Path
from lbaas.host.daemons import Daemons, become_subreaper

work = Path(sys.argv[1])
subreaper = become_subreaper()
daemons = Daemons(reap_interval=0.1)
orphan_file = work / "orphan"
pid = daemons.spawn(
    ["sh", "-c", f"sleep 60 & echo $! > {orphan_file}; exec sleep 60"], work / "daemon.log"
)
deadline = time.monotonic() + 20
while not orphan_file.exists() or not orphan_file.read_text().strip():
    assert time.monotonic() < deadline, "the daemon never started its child"
    time.sleep(0.05)
orphan = int(orphan_file.read_text())
other = subprocess.Popen(["sh", "-c", "exit 3"])  # not a daemon: never the reaper's
os.kill(pid, signal.SIGKILL)
daemons.wait(pid, 10)
os.kill(orphan, signal.SIGTERM)
def state(p):
    try:
        return Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
deadline = time.monotonic() + 20
while state(orphan) is not None and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.5)  # a few more reaper rounds with the other child a zombie
print(json.dumps({
    "subreaper": subreaper,
    "orphan_state": state(orphan),
    "reaped": daemons.reaped,
    "other_status": other.wait(timeout=10),
}))
"""


def test_orphans_of_daemons_are_reaped_and_other_children_keep_their_status(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["subreaper"] is True
    assert result["orphan_state"] is None, result  # not left a zombie
    assert result["reaped"] == 1
    assert result["other_status"] == 3  # its exit status was not stolen
