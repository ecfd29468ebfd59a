"""``oslopolicy-sample-generator --namespace lbaas`` finds lbaas's rules.

The entry point is read from pyproject.toml and installed, for this run only, as the
metadata of a distribution named lbaas in a temporary directory put first on the path
(the venv's editable install belongs to the main checkout, whose pyproject may differ).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import lbaas

ROOT = Path(lbaas.__file__).parent.parent


def test_the_sample_generator_prints_octavias_rules(tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]["oslo.policy.policies"]
    info = tmp_path / "lbaas-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lbaas\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[oslo.policy.policies]\n{lines}")
    generator = shutil.which("oslopolicy-sample-generator")
    assert generator is not None
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [generator, "--namespace", "lbaas"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for rule in (
        '#"os_load-balancer_api:loadbalancer:get_one": "rule:load-balancer:read"',
        '#"os_load-balancer_api:member:get_all": "rule:load-balancer:read or rule:service"',
        '#"os_load-balancer_api:amphora:put_failover": "rule:load-balancer:admin"',
        '#"load-balancer:observer_and_owner": "role:reader and rule:load-balancer:owner"',
        "role:load-balancer_observer",  # the deprecated alternative, documented
    ):
        assert rule in done.stdout
