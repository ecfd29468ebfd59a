"""A real Horizon for the tests: ``horizon`` with ``octavia-dashboard`` from the OpenStack
environment (tests/support/openstack_venv.py), against a test Keystone.

``horizon_server(keystone_url)`` writes a ``local/local_settings.py`` in a temporary
directory (put on uwsgi's Python path: Horizon's settings import ``local.local_settings``),
enables octavia-dashboard's panel as its install guide says (its ``enabled`` file in
Horizon's ``local/enabled``: here a directory of the temporary one added to that package's
path, since the environment is not written into), serves
``openstack_dashboard.wsgi`` under uwsgi on a free loopback port with the static files
mapped, and stops it and removes the directory when the block ends, whatever happened.

Sessions live in signed cookies and the cache in the process (no memcached). Horizon
serves its CSS and JavaScript compressed offline: ``collectstatic`` and ``compress`` cost
about a minute of CPU, so their result is kept in the temporary directory's
lbaas-test-cache, once per version of Horizon and octavia-dashboard (it holds no secret).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.keystone_server import free_port
from tests.support.openstack_venv import openstack_command, openstack_venv
from tests.support.processes import stop_group

START_TIMEOUT = 120.0
SETTINGS = """\
import openstack_dashboard.local.enabled as _local_enabled

# octavia-dashboard's install step: its enabled file in Horizon's local/enabled.
_local_enabled.__path__.append({enabled!r})

DEBUG = False
SECRET_KEY = {secret!r}
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
LOCAL_PATH = {local!r}
OPENSTACK_HOST = "127.0.0.1"
OPENSTACK_KEYSTONE_URL = {keystone!r}
OPENSTACK_KEYSTONE_DEFAULT_ROLE = "member"
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
CACHES = {{"default": {{"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}}}
STATIC_ROOT = {static!r}
COMPRESS_OFFLINE = True
LOGGING = {{
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {{"file": {{"class": "logging.FileHandler", "filename": {log!r}}}}},
    "root": {{"handlers": ["file"], "level": "INFO"}},
}}
"""


@dataclass
class HorizonServer:
    url: str
    directory: Path

    @property
    def log(self) -> str:
        """What Horizon logged (its errors name the API call that failed)."""
        path = self.directory / "horizon.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _versions() -> str:
    site = next(openstack_venv().glob("lib/python*/site-packages"))
    names = [
        next(site.glob(f"{package}-*.dist-info")).name
        for package in ("horizon", "octavia_dashboard")
    ]
    return "+".join(names)


def _write_settings(directory: Path, keystone_url: str, static: Path) -> None:
    enabled = directory / "enabled"
    enabled.mkdir()
    site = next(openstack_venv().glob("lib/python*/site-packages"))
    for panel in (site / "octavia_dashboard" / "enabled").glob("_*.py"):
        shutil.copy(panel, enabled)
    local = directory / "local"
    local.mkdir()
    (local / "__init__.py").write_text("")
    text = SETTINGS.format(
        enabled=str(enabled),
        secret=secrets.token_urlsafe(32),
        local=str(local),
        keystone=keystone_url,
        static=str(static),
        log=str(directory / "horizon.log"),
    )
    (local / "local_settings.py").write_text(text)


def _env(directory: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(directory),
        "DJANGO_SETTINGS_MODULE": "openstack_dashboard.settings",
    }


def _static_files(directory: Path, static: Path) -> None:
    """``collectstatic`` and ``compress`` into ``static`` unless a finished run is there
    (marked by ``.complete``, written last)."""
    if (static / ".complete").exists():
        return
    shutil.rmtree(static, ignore_errors=True)
    python = openstack_command("python")
    for step in (["collectstatic", "--noinput", "-v0"], ["compress", "--force", "-v0"]):
        done = subprocess.run(
            [python, "-m", "django", *step],
            env=_env(directory),
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise RuntimeError(f"django {step[0]} failed: {done.stderr[-3000:]}")
    (static / ".complete").write_text("")


def _wait_serving(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"uwsgi ended: {log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "auth/login/", timeout=10).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(f"Horizon not serving at {url}: {log.read_text()[-3000:]}")


@contextlib.contextmanager
def horizon_server(keystone_url: str) -> Iterator[HorizonServer]:
    """Horizon with octavia-dashboard on 127.0.0.1 (see the module's text)."""
    directory = Path(tempfile.mkdtemp(prefix="horizon-"))
    cache = Path(tempfile.gettempdir()) / "lbaas-test-cache" / f"horizon-static-{_versions()}"
    cache.parent.mkdir(exist_ok=True)
    try:
        _write_settings(directory, keystone_url, cache)
        _static_files(directory, cache)
        port = free_port()
        log = directory / "uwsgi.log"
        argv = [
            openstack_command("uwsgi"),
            *("--http-socket", f"127.0.0.1:{port}"),
            *("--module", "openstack_dashboard.wsgi:application"),
            *("--static-map", f"/static={cache}", "--add-header", "Connection: close"),
            *("--virtualenv", str(openstack_venv()), "--pythonpath", str(directory)),
            *("--master", "--processes", "1", "--threads", "4"),
            *("--die-on-term", "--need-app", "--disable-logging"),
        ]
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                env=_env(directory),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}/"
        try:
            _wait_serving(url, proc, log)
            yield HorizonServer(url=url, directory=directory)
        finally:
            stop_group(proc)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
