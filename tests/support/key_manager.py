"""Storing test certificates in lbaas's key manager through its Barbican-style API."""

from __future__ import annotations

import httpx

from tests.support.certificates import Issued


def store_certificate_container(client: httpx.Client, project: str, server: Issued) -> str:
    """A certificate container (certificate and private key) of ``project``: its ref.

    ``client`` is an in-process ``TestClient`` or a client of a running lbaas."""
    headers = {"X-Project-Id": project, "X-Roles": "member"}
    refs = []
    for name, payload in (("certificate", server.cert_pem), ("private_key", server.key_pem())):
        body = {"payload": payload.decode(), "payload_content_type": "text/plain"}
        made = client.post("/key-manager/v1/secrets/", json=body, headers=headers)
        assert made.status_code == 201, made.text
        refs.append({"name": name, "secret_ref": made.json()["secret_ref"]})
    made = client.post(
        "/key-manager/v1/containers/",
        json={"name": "tls", "type": "certificate", "secret_refs": refs},
        headers=headers,
    )
    assert made.status_code == 201, made.text
    return str(made.json()["container_ref"])
