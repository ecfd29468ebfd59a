"""Golden files of the keepalived renderer, compared exactly and checked by keepalived.

Every case of ``keepalived_cases`` renders byte for byte to its file under
``tests/golden/keepalived/`` (``LBAAS_REGEN_GOLDEN=1`` rewrites them), and every file passes
the real ``keepalived --config-test`` (root: it runs in a scratch namespace holding a link
of the configured name) without a single complaint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from lbaas.errors import PermanentError
from lbaas.render.keepalived import VrrpConfig, render_keepalived_config
from lbaas.render.keepalived.config import advert_interval_word

from .keepalived_cases import CASES, GOLDEN_INTERFACE, MASTER_V4, RUN_DIR, KeepalivedCase

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "keepalived"
REGENERATE = os.environ.get("LBAAS_REGEN_GOLDEN") == "1"


def golden_path(case: KeepalivedCase) -> Path:
    return GOLDEN_DIR / f"{case.name}.conf"


@pytest.fixture(scope="module", autouse=True)
def _regenerate_when_asked() -> None:
    if REGENERATE:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            golden_path(case).write_text(render_keepalived_config(case.config))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_render_matches_golden(case: KeepalivedCase) -> None:
    assert render_keepalived_config(case.config) == golden_path(case).read_text()


def test_every_golden_file_belongs_to_a_case() -> None:
    assert {p.name for p in GOLDEN_DIR.glob("*.conf")} == {golden_path(c).name for c in CASES}


@pytest.mark.parametrize(
    ("ms", "word"), [(100, "0.10"), (250, "0.25"), (1000, "1.00"), (1230, "1.23")]
)
def test_advert_interval_is_written_in_centiseconds(ms: int, word: str) -> None:
    assert advert_interval_word(ms) == word


@pytest.mark.parametrize(
    "change",
    [
        {"interface": "eth0 }\nvrrp_instance evil {"},
        {"instance_name": 'x"y'},
        {"check_command": ("relative/script",)},
        {"check_command": ("/bin/check", "a b")},
        {"notify_command": ("/bin/notify", 'x"; reboot')},
        {"virtual_router_id": 0},
        {"priority": 255},
        {"advert_interval_ms": 105},
        {"peer_address": "10.9.0.11"},
        {"vip": "fd00::5/64"},
    ],
)
def test_bad_input_is_refused_not_written(change: dict[str, object]) -> None:
    fields = {**MASTER_V4.__dict__, **change}
    with pytest.raises(PermanentError):
        render_keepalived_config(VrrpConfig(**fields))  # type: ignore[arg-type]


def _keepalived() -> str:
    path = shutil.which("keepalived") or shutil.which("keepalived", path="/usr/sbin:/sbin")
    if path is None:
        pytest.fail("the keepalived binary is required to validate rendered configurations")
    return path


@pytest.fixture(scope="module")
def scratch_namespace() -> Iterator[str]:
    """A namespace holding a link named like the goldens' VIP link (one end of a veth)."""
    if os.geteuid() != 0:
        pytest.skip("keepalived --config-test needs the link to exist: a namespace, so root")
    name = f"lbt-kagold-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(
            ["ip", "-n", name, "link", "add", GOLDEN_INTERFACE, "type", "veth", "peer", "lbgold1"],
            check=True,
        )
        subprocess.run(["ip", "-n", name, "link", "set", GOLDEN_INTERFACE, "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


@pytest.mark.root
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_is_accepted_by_keepalived(case: KeepalivedCase, scratch_namespace: str) -> None:
    with tempfile.TemporaryDirectory(prefix="lbka-") as tmp:
        run_dir = Path(tmp)
        run_dir.chmod(0o755)
        for name in ("haproxy-check", "vrrp-state"):
            script = run_dir / name
            shutil.copyfile(str(files("lbaas.amphora").joinpath(f"scripts/{name}")), script)
            script.chmod(0o755)
        config = run_dir / "keepalived.conf"
        config.write_text(golden_path(case).read_text().replace(RUN_DIR, str(run_dir)))
        argv = ["ip", "netns", "exec", scratch_namespace, _keepalived(), "--config-test"]
        result = subprocess.run(
            [*argv, "-f", str(config)], capture_output=True, text=True, timeout=30, check=False
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert output.strip() == "", output
