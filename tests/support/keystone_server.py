"""A real Keystone for the tests: the ``keystone`` package of the OpenStack environment
(tests/support/openstack_venv.py), on SQLite, fernet tokens, under uwsgi on 127.0.0.1.

``keystone_server()`` writes a keystone.conf in a temporary directory, runs
``keystone-manage fernet_setup``, ``credential_setup``, ``db_sync`` (once per Keystone
version: the migrated, still empty database is kept in the temporary directory's
lbaas-test-cache) and ``bootstrap`` (admin in project admin, region RegionOne, the
identity endpoint), serves
``keystone.wsgi.api:application`` on a free loopback port, and stops it and removes the
directory when the block ends, whatever happened inside. Setting it up costs some
20 seconds (a minute when the migrations run), so tests share one per session. ``short_lived()`` serves the same database and keys a second time with another
token lifetime: its tokens expire within seconds and the first server (or lbaas) sees
them expired, for the expired-token tests.

The helpers talk to Keystone's v3 API as admin with keystoneauth1 (lbaas's own
dependency), so they cost no CLI start; ``cli_env()`` gives the ``OS_*`` variables with
which the stock ``openstack`` CLI authenticates as a user with a password.
"""

from __future__ import annotations

import contextlib
import getpass
import grp
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keystoneauth1 import session
from keystoneauth1.identity import v3

from tests.support.openstack_venv import openstack_command, openstack_venv
from tests.support.processes import stop_group

REGION = "RegionOne"
#: Octavia's roles, and the keystone defaults its new policies use.
LOAD_BALANCER_ROLES = (
    "load-balancer_observer",
    "load-balancer_global_observer",
    "load-balancer_member",
    "load-balancer_quota_admin",
    "load-balancer_admin",
)
KEYSTONE_ROLES = ("admin", "reader", "member", "manager", "service")
START_TIMEOUT = 90.0
#: uwsgi worker processes of one test Keystone (each with 8 threads).
PROCESSES = 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _conf(directory: Path, expiration: int) -> str:
    return "\n".join(
        [
            "[DEFAULT]",
            f"log_file = {directory / 'keystone.log'}",
            "[database]",
            f"connection = sqlite:///{directory / 'keystone.db'}",
            # bcrypt at 4 rounds, Keystone's minimum, not its default 12: every token a
            # test asks for checks a password, and at 12 rounds a loaded 2-core machine
            # takes seconds per token (tempest creates users for every test class).
            "[identity]",
            "password_hash_rounds = 4",
            "[token]",
            "provider = fernet",
            f"expiration = {expiration}",
            "[fernet_tokens]",
            f"key_repository = {directory / 'fernet-keys'}",
            "[credential]",
            f"key_repository = {directory / 'credential-keys'}",
            "",
        ]
    )


def _manage(conf: Path, *steps: tuple[str, ...]) -> None:
    """Run keystone-manage for each of ``steps`` at the same time (each costs seconds of
    imports; they touch different files)."""
    command = [openstack_command("keystone-manage"), "--config-file", str(conf)]
    runs = [
        subprocess.Popen(
            [*command, *step], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for step in steps
    ]
    failed = []
    for step, run in zip(steps, runs, strict=True):
        _, err = run.communicate(timeout=300)
        if run.returncode != 0:
            failed.append(f"keystone-manage {step[0]} failed: {err[-2000:]}")
    if failed:
        raise RuntimeError("\n".join(failed))


def _wait_serving(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    http = session.Session(timeout=5)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"uwsgi ended: {log.read_text()[-2000:]}")
        with contextlib.suppress(Exception):
            if http.get(url, authenticated=False, raise_exc=False).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"Keystone not serving at {url}: {log.read_text()[-2000:]}")


def _migrated_database(conf: Path, target: Path) -> None:
    """``keystone-manage db_sync`` into ``target``, done once per Keystone version: its
    migrations are most of the setup's cost and their result holds no key or password."""
    version = next(openstack_venv().glob("lib/python*/site-packages/keystone-*.dist-info"))
    cache = Path(tempfile.gettempdir()) / "lbaas-test-cache" / f"{version.name}.sqlite"
    if not cache.exists():
        _manage(conf, ("db_sync",))
        cache.parent.mkdir(exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}")
        shutil.copyfile(target, partial)
        partial.replace(cache)
        return
    shutil.copyfile(cache, target)


@contextlib.contextmanager
def _uwsgi(conf_dir: Path, port: int) -> Iterator[str]:
    """Serve Keystone with the keystone.conf in ``conf_dir``; its /v3 URL."""
    log = conf_dir / "uwsgi.log"
    argv = [
        openstack_command("uwsgi"),
        *("--http-socket", f"127.0.0.1:{port}", "--module", "keystone.wsgi.api:application"),
        # uwsgi's HTTP socket closes each connection: say so, or clients reuse a closed one.
        *("--add-header", "Connection: close"),
        *("--virtualenv", str(openstack_venv()), "--master", "--die-on-term", "--need-app"),
        # Two processes: one process's threads share a GIL, and a whole tempest run
        # beside the system tests (bcrypt and fernet work on every token) lost token
        # requests behind it. Each process loads Keystone after the fork (lazy-apps), so
        # none inherits the master's SQLite connections. Several processes on one SQLite
        # file are safe for Keystone: fernet tokens are not stored, the keys are files
        # read by all, and a writer waits for the lock (short_lived() already serves the
        # same file from a second server).
        *("--processes", str(PROCESSES), "--threads", "8", "--lazy-apps", "--disable-logging"),
        # Under a loaded machine (tempest's credential set-up beside the system tests) the
        # default 4 s socket timeout and 100-connection backlog closed token requests
        # unanswered (RemoteDisconnected at POST /v3/auth/tokens).
        *("--socket-timeout", "60", "--listen", "128"),
    ]
    env = {**os.environ, "OS_KEYSTONE_CONFIG_DIR": str(conf_dir)}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}/v3"
    try:
        _wait_serving(url, proc, log)
        yield url
    finally:
        stop_group(proc)


@dataclass
class KeystoneServer:
    url: str
    admin_password: str
    directory: Path
    port: int
    _admin: session.Session = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._admin = self.session("admin", self.admin_password, "admin")

    # --- sessions and tokens -------------------------------------------------------
    def session(
        self, user: str, password: str, project: str | None, url: str | None = None
    ) -> session.Session:
        """A keystoneauth1 session authenticated as ``user`` (project-scoped, or system
        scoped when ``project`` is None), at ``url`` (another server, short_lived's) or
        this server."""
        scope: dict[str, Any] = (
            {"project_name": project, "project_domain_name": "Default"}
            if project is not None
            else {"system_scope": "all"}
        )
        auth = v3.Password(
            auth_url=url or self.url,
            username=user,
            password=password,
            user_domain_name="Default",
            **scope,
        )
        return session.Session(auth=auth, timeout=30)

    def token(self, user: str, password: str, project: str | None, url: str | None = None) -> str:
        """A new token of ``user`` (issued at ``url``: see session)."""
        token = self.session(user, password, project, url).get_token()
        assert token
        return str(token)

    def revoke(self, token: str) -> None:
        """What ``openstack token revoke`` does: Keystone records a revocation event."""
        self._call("DELETE", "/auth/tokens", headers={"X-Subject-Token": token})

    def cli_env(
        self, user: str, password: str, project: str, region: str = REGION
    ) -> dict[str, str]:
        """The environment with which the stock ``openstack`` CLI logs in as ``user``,
        taking its endpoints from ``region``'s part of the catalog."""
        return {
            **self._cli_base(region),
            "OS_AUTH_TYPE": "password",
            "OS_USERNAME": user,
            "OS_PASSWORD": password,
            "OS_PROJECT_NAME": project,
            "OS_USER_DOMAIN_NAME": "Default",
            "OS_PROJECT_DOMAIN_NAME": "Default",
        }

    def cli_env_application_credential(self, credential: tuple[str, str]) -> dict[str, str]:
        """The same, logging in with an application credential (id, secret)."""
        return {
            **self._cli_base(REGION),
            "OS_AUTH_TYPE": "v3applicationcredential",
            "OS_APPLICATION_CREDENTIAL_ID": credential[0],
            "OS_APPLICATION_CREDENTIAL_SECRET": credential[1],
        }

    def _cli_base(self, region: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        return {
            **base,
            "OS_AUTH_URL": self.url,
            "OS_IDENTITY_API_VERSION": "3",
            "OS_REGION_NAME": region,
            "OS_INTERFACE": "public",
        }

    # --- identity objects, created as admin ----------------------------------------
    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        reply = self._admin.request(self.url + path, method, **kwargs)
        return reply.json() if reply.content else None

    def _find(self, collection: str, name: str) -> str | None:
        found = self._call("GET", f"/{collection}", params={"name": name})[collection]
        return str(found[0]["id"]) if found else None

    def role(self, name: str) -> str:
        """The id of role ``name``, created when missing."""
        found = self._find("roles", name)
        if found:
            return found
        return str(self._call("POST", "/roles", json={"role": {"name": name}})["role"]["id"])

    def project(self, name: str) -> str:
        """The id of project ``name`` (domain Default), created when missing."""
        found = self._find("projects", name)
        if found:
            return found
        body = {"project": {"name": name, "domain_id": "default"}}
        return str(self._call("POST", "/projects", json=body)["project"]["id"])

    def set_project_enabled(self, project_id: str, enabled: bool) -> None:
        body = {"project": {"enabled": enabled}}
        self._call("PATCH", f"/projects/{project_id}", json=body)

    def user(
        self, name: str, password: str, project: str | None = None, roles: tuple[str, ...] = ()
    ) -> str:
        """Create user ``name`` and give it ``roles`` on ``project`` (on the system when
        ``project`` is None); its id."""
        body = {"user": {"name": name, "password": password, "domain_id": "default"}}
        user_id = str(self._call("POST", "/users", json=body)["user"]["id"])
        self.grant(user_id, project, roles)
        return user_id

    def grant(self, user_id: str, project: str | None, roles: tuple[str, ...]) -> None:
        target = f"/projects/{self.project(project)}" if project else "/system"
        for role in roles:
            self._call("PUT", f"{target}/users/{user_id}/roles/{self.role(role)}")

    def service_user(self, name: str = "lbaas") -> tuple[str, str]:
        """A service user (role service in project service), as lbaas's token validation
        needs; its name and password."""
        password = secrets.token_urlsafe(12)
        self.user(name, password, "service", ("service",))
        return name, password

    def application_credential(
        self, user: str, password: str, project: str, name: str
    ) -> tuple[str, str]:
        """An application credential ``user`` makes for itself in ``project``: id, secret."""
        own = self.session(user, password, project)
        user_id = own.get_user_id()
        body = {"application_credential": {"name": name}}
        reply = own.post(f"{self.url}/users/{user_id}/application_credentials", json=body)
        made = reply.json()["application_credential"]
        return str(made["id"]), str(made["secret"])

    def register_service(
        self, service_type: str, name: str, url: str, region: str = REGION
    ) -> None:
        """Put ``url`` in the catalog as ``region``'s ``service_type`` (public and
        internal endpoints), as an operator does with ``openstack endpoint create``. A
        region of its own keeps one test module's lbaas apart from another's in the same
        Keystone (the CLI picks its endpoints by region)."""
        if not any(r["id"] == region for r in self._call("GET", "/regions")["regions"]):
            self._call("POST", "/regions", json={"region": {"id": region}})
        body = {"service": {"type": service_type, "name": name}}
        service_id = self._call("POST", "/services", json=body)["service"]["id"]
        for interface in ("public", "internal"):
            endpoint = {"service_id": service_id, "interface": interface, "url": url}
            self._call("POST", "/endpoints", json={"endpoint": {**endpoint, "region_id": region}})

    def catalog(self) -> list[dict[str, Any]]:
        """The service catalog, as a project-scoped token of admin carries it."""
        return list(self._call("GET", "/auth/catalog")["catalog"])

    @contextlib.contextmanager
    def short_lived(self, expiration: int) -> Iterator[str]:
        """A second server of the same database and keys whose tokens last ``expiration``
        seconds; its /v3 URL."""
        conf_dir = Path(tempfile.mkdtemp(prefix="short-", dir=self.directory))
        (conf_dir / "keystone.conf").write_text(_conf(self.directory, expiration))
        with _uwsgi(conf_dir, free_port()) as url:
            yield url


@contextlib.contextmanager
def keystone_server(expiration: int = 3600) -> Iterator[KeystoneServer]:
    """A bootstrapped Keystone on 127.0.0.1 (see the module's text); removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="keystone-"))
    try:
        conf = directory / "keystone.conf"
        conf.write_text(_conf(directory, expiration))
        owner = ("--keystone-user", getpass.getuser())
        owner += ("--keystone-group", grp.getgrgid(os.getgid()).gr_name)
        _migrated_database(conf, directory / "keystone.db")
        port = free_port()
        url = f"http://127.0.0.1:{port}/v3"
        password = secrets.token_urlsafe(12)
        bootstrap = ("bootstrap", "--bootstrap-password", password)
        bootstrap += ("--bootstrap-region-id", REGION, "--bootstrap-public-url", url)
        bootstrap += ("--bootstrap-internal-url", url, "--bootstrap-admin-url", url)
        # bootstrap needs the fernet key repository: run it once the keys are there (run
        # beside fernet_setup, it failed now and then with "fernet-keys does not exist").
        _manage(conf, ("fernet_setup", *owner), ("credential_setup", *owner))
        _manage(conf, bootstrap)
        with _uwsgi(directory, port):
            server = KeystoneServer(
                url=url, admin_password=password, directory=directory, port=port
            )
            for role in (*LOAD_BALANCER_ROLES, *KEYSTONE_ROLES):
                server.role(role)
            yield server
    finally:
        shutil.rmtree(directory, ignore_errors=True)
