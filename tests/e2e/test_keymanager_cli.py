"""The key manager driven by the unmodified ``openstack secret …`` commands
(python-barbicanclient) against ``lbaas serve``: store, certificate container, payload, a
TERMINATED_HTTPS listener created with ``openstack loadbalancer`` on that container;
nothing in clear in the database files or the log; KEK rotation while serving; a wrong KEK
stops start-up with a clear error and loses nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from lbaas.certs.kek import KeyRing, load_key_ring, save_key_ring
from tests.e2e.amphora.openstack_cli import openstack_executable
from tests.e2e.conftest import Served, free_port
from tests.support.certificates import issue, make_ca
from tests.support.processes import lbaas_env

pytestmark = [pytest.mark.slow]


class SecretCli:
    def __init__(self, url: str) -> None:
        # The API's bare address, as the quick start exports it (OS_ENDPOINT): the secret
        # commands find the key manager under it without a --os-endpoint of their own.
        self.base = [openstack_executable(), "--os-auth-type", "none", "--os-endpoint", url]

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"
        return done.stdout

    def value(self, column: str, *args: str) -> str:
        return self.run(*args, "-f", "value", "-c", column).strip()


def _lbaas(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lbaas.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_secret_cli_sealing_rotation_and_wrong_key(noop_server: Served, tmp_path: Path) -> None:
    cli = SecretCli(noop_server.url)
    server = issue(make_ca(), "www.example.com", ("www.example.com",))
    (tmp_path / "c.pem").write_bytes(server.cert_pem)
    (tmp_path / "k.pem").write_bytes(server.key_pem())
    store = ("secret", "store", "-t", "text/plain", "--file")
    cert = cli.value("Secret href", *store, str(tmp_path / "c.pem"), "--name", "cert")
    key = cli.value("Secret href", *store, str(tmp_path / "k.pem"), "--name", "key")
    container = cli.value(
        "Container href",
        "secret", "container", "create", "--name", "tls", "--type", "certificate",
        "--secret", f"certificate={cert}", "--secret", f"private_key={key}",
    )  # fmt: skip
    assert "/key-manager/v1/containers/" in container
    # The issue-2 workflow's CLI with that certificate: a TERMINATED_HTTPS listener.
    lbcli = [openstack_executable(), "--os-auth-type", "none", "--os-endpoint", noop_server.url]
    for args in (
        ["loadbalancer", "create", "--name", "web", "--vip-subnet-id", "lbaas-loopback", "--wait"],
        ["loadbalancer", "listener", "create", "--name", "https", "--protocol", "TERMINATED_HTTPS",
         "--protocol-port", "443", "--default-tls-container-ref", container, "--wait", "web"],
    ):  # fmt: skip
        done = subprocess.run([*lbcli, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    listeners = httpx.get(f"{noop_server.url}/v2/lbaas/listeners", timeout=30).json()["listeners"]
    assert [x["default_tls_container_ref"] for x in listeners] == [container]
    assert cli.run("secret", "get", "--payload", "-f", "value", key).strip() == (
        server.key_pem().decode().strip()
    )

    # At rest and in the log: no key material (the WAL holds the newest pages).
    state = noop_server.state_dir
    marker = server.key_pem().splitlines()[1]
    for path in [*state.glob("lbaas.sqlite*"), noop_server.log]:
        assert marker not in path.read_bytes(), path
    kek = state / "keymanager.kek"
    assert kek.stat().st_mode & 0o777 == 0o600

    # Rotation while serving: a new primary, the running API follows it.
    env = lbaas_env({"state_dir": str(state)})
    before = load_key_ring(kek)
    rotated = _lbaas("keymanager", "rotate-kek", env=env)
    assert rotated.returncode == 0, rotated.stderr
    assert "2 secret(s) re-sealed" in rotated.stdout
    after = load_key_ring(kek)
    assert before is not None and after is not None
    assert set(after.keys) == {after.primary} and after.primary not in before.keys
    assert _payload(cert) == server.cert_pem

    # A wrong key file: start-up refuses, names the file, and nothing is lost.
    kek.rename(tmp_path / "kek.saved")
    save_key_ring(kek, KeyRing.generate())
    refused = _lbaas("api", "--port", str(free_port()), env=env)
    assert refused.returncode == 2
    assert "keymanager.kek" in refused.stderr and "cannot open" in refused.stderr
    (tmp_path / "kek.saved").replace(kek)
    assert _payload(key) == server.key_pem()


def _payload(ref: str) -> bytes:
    # The CLI's own payload GET was shown above; later checks save its start-up time.
    got = httpx.get(f"{ref}/payload", headers={"Accept": "text/plain"}, timeout=30)
    assert got.status_code == 200, got.text
    return got.content
