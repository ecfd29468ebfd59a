"""Certificate references into the operator's Barbican (``[keymanager] barbican_endpoints``).

No Barbican runs here; a second ``lbaas serve``, whose key manager speaks Barbican's v1 API
and reads the project from ``X-Project-Id`` as Barbican's unauthenticated pipeline does,
stands in for it. The load balancer's own lbaas holds none of the material: it reads the
container from the other one at validation and at converge, and HAProxy serves it; while
that Barbican is down, converges are retried rather than failed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.serve_process import ServeInstance, kill_and_restart, running_serve
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.support.certificates import issue, make_ca
from tests.support.key_manager import store_certificate_container
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]
NAME = "remote.example.com"


@pytest.fixture(scope="module")
def barbican() -> Iterator[ServeInstance]:
    noop = {"providers": {"enabled": ["noop"], "default": "noop"}}
    with running_serve(noop, prefix="lbb-") as instance:
        yield instance


def test_a_listener_serves_a_certificate_held_in_the_operators_barbican(
    barbican: ServeInstance, backends: BackendFleet, tmp_path: Path
) -> None:
    ca = make_ca("Remote CA")
    with httpx.Client(base_url=barbican.url, timeout=30) as km:
        ref = store_certificate_container(km, "default", issue(ca, NAME, (NAME,)))
        foreign = store_certificate_container(km, "someone-else", issue(ca, "x.example.com"))
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    settings = {"keymanager": {"barbican_endpoints": [f"{barbican.url}/key-manager"]}}
    with running_serve(settings) as serve, serve.api() as api:
        (one,) = backends.http("one")
        with loadbalancer(api, "barbican") as lb:
            # Another project's container in that Barbican is refused, as a missing one is.
            refused = api.http.post(
                "/v2/lbaas/listeners",
                json={"listener": {"loadbalancer_id": lb.id, "protocol": "TERMINATED_HTTPS",
                                   "protocol_port": lb.port(), "default_tls_container_ref": foreign}},
            )  # fmt: skip
            assert refused.status_code == 400, refused.text
            assert "Could not retrieve certificate" in refused.text and "HTTP 404" in refused.text
            service = http_service(
                lb, [one], protocol="TERMINATED_HTTPS", pool_protocol="HTTP",
                listener_fields={"default_tls_container_ref": ref},
            )  # fmt: skip
            url = f"https://{NAME}:{service.port}/"

            def curl() -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    ["curl", "-sS", "--max-time", "10", "--cacert", str(tmp_path / "ca.pem"),
                     "--resolve", f"{NAME}:{service.port}:{service.vip}", url],
                    capture_output=True, text=True, timeout=30, check=False,
                )  # fmt: skip

            wait_until(lambda: curl().returncode == 0, 30, "TLS with the remote certificate")
            assert curl().stdout == "one"

            # Barbican down: a change is retried (PENDING_UPDATE, the reason shown), not
            # put in ERROR, and the listener serves on; Barbican back, the change lands.
            with kill_and_restart(barbican):
                path = f"/v2/lbaas/listeners/{service.listener['id']}"
                renamed = api.http.put(path, json={"listener": {"name": "renamed"}})
                assert renamed.status_code == 200, renamed.text

                def retried() -> bool:
                    return "Barbican not reachable" in (api.converge_error(lb.id) or "")

                wait_until(retried, 30, "the converge to fail on the unreachable Barbican")
                assert api.loadbalancer(lb.id)["provisioning_status"] == "PENDING_UPDATE"
                assert curl().stdout == "one"
            api.wait_active(lb.id)
            assert curl().stdout == "one"
        # The material was read, never stored: this lbaas's own key manager holds nothing.
        listed = api.http.get("/key-manager/v1/secrets").json()
        assert listed["total"] == 0
