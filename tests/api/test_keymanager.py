"""The key manager's v1 API in-process (SQLite and PostgreSQL): Barbican's shapes, project
scoping, sealing at rest, and payloads kept out of every error and view."""

from __future__ import annotations

import base64
from typing import Any

from starlette.testclient import TestClient

from lbaas.db.tables import SecretRow
from tests.support.certificates import issue, make_ca

KM = "/key-manager/v1"
PEM_MARK = "-----BEGIN PRIVATE KEY-----"


def who(project: str, roles: str = "member") -> dict[str, str]:
    return {"X-Project-Id": project, "X-Roles": roles}


def store(client: TestClient, project: str, **body: Any) -> str:
    got = client.post(f"{KM}/secrets/", json=body, headers=who(project))
    assert got.status_code == 201, got.text
    ref: str = got.json()["secret_ref"]
    assert ref.startswith("http://testserver/key-manager/v1/secrets/")
    return ref


def test_version_documents(client: TestClient) -> None:
    root = client.get("/key-manager/").json()["versions"]["values"][0]
    assert (root["id"], root["min_version"], root["max_version"]) == ("v1", "1.0", "1.1")
    assert client.get(f"{KM}").json()["version"]["status"] == "CURRENT"


def test_the_bare_api_address_serves_barbicans_client(client: TestClient) -> None:
    """barbicanclient given only the API's address reads ``/`` and sends ``/secrets…`` and
    ``/containers…`` there, each with a key-manager microversion header; Octavia's clients
    (no such header) keep their own version document and get 404 for those paths."""
    km = {"OpenStack-API-Version": "key-manager 1.1", **who("p1")}
    root = client.get("/", headers=km).json()["versions"]["values"][0]
    assert root["links"][0]["href"] == "http://testserver/key-manager/v1/"
    assert client.get("/").json()["versions"][0]["id"] == "v2.0"
    created = client.post(
        "/secrets/",
        json={"name": "bare", "payload": "x", "payload_content_type": "text/plain"},
        headers=km,
    )
    assert created.status_code == 201, created.text
    ref = created.json()["secret_ref"]
    assert ref.startswith("http://testserver/key-manager/v1/secrets/")
    listed = client.get("/secrets", params={"name": "bare"}, headers=km).json()["secrets"]
    assert [s["secret_ref"] for s in listed] == [ref]
    assert client.get("/containers", headers=km).json()["total"] == 0
    assert client.get("/secrets", headers=who("p1")).status_code == 404


def test_one_step_store_metadata_payload_list_delete(client: TestClient, plane: Any) -> None:
    ca = make_ca()
    server = issue(ca, "a.example.com")
    key = server.key_pem().decode()
    ref = store(
        client,
        "p1",
        name="key",
        payload=key,
        payload_content_type="text/plain",
        secret_type="private",
    )
    sid = ref.rsplit("/", 1)[1]
    shown = client.get(f"{KM}/secrets/{sid}", headers=who("p1", "reader")).json()
    assert shown["content_types"] == {"default": "text/plain"}
    assert (shown["name"], shown["secret_type"], shown["status"]) == ("key", "private", "ACTIVE")
    assert PEM_MARK not in str(shown)
    payload = client.get(
        f"{KM}/secrets/{sid}/payload", headers={**who("p1"), "Accept": "text/plain"}
    )
    assert payload.status_code == 200 and payload.text == key
    assert (
        client.get(
            f"{KM}/secrets/{sid}/payload",
            headers={**who("p1"), "Accept": "application/octet-stream"},
        ).status_code
        == 406
    )
    listed = client.get(f"{KM}/secrets?limit=5", headers=who("p1")).json()
    assert listed["total"] == 1 and listed["secrets"][0]["secret_ref"] == ref
    assert PEM_MARK not in str(listed)
    with plane.database.read() as session:
        row = session.get(SecretRow, sid)
        assert row.ciphertext is not None and PEM_MARK.encode() not in row.ciphertext
    assert client.delete(f"{KM}/secrets/{sid}", headers=who("p1")).status_code == 204
    assert client.get(f"{KM}/secrets/{sid}", headers=who("p1")).status_code == 404


def test_two_step_store_and_binary_payload(client: TestClient) -> None:
    ref = store(client, "p1", name="later")
    sid = ref.rsplit("/", 1)[1]
    assert "content_types" not in client.get(f"{KM}/secrets/{sid}", headers=who("p1")).json()
    assert client.get(f"{KM}/secrets/{sid}/payload", headers=who("p1")).status_code == 404
    blob = bytes(range(256))
    put = client.put(
        f"{KM}/secrets/{sid}",
        content=blob,
        headers={**who("p1"), "Content-Type": "application/octet-stream"},
    )
    assert put.status_code == 204
    again = client.put(
        f"{KM}/secrets/{sid}", content=b"x", headers={**who("p1"), "Content-Type": "text/plain"}
    )
    assert again.status_code == 409
    got = client.get(
        f"{KM}/secrets/{sid}/payload", headers={**who("p1"), "Accept": "application/octet-stream"}
    )
    assert got.content == blob
    ref2 = store(
        client,
        "p1",
        payload=base64.b64encode(blob).decode(),
        payload_content_type="application/octet-stream",
        payload_content_encoding="base64",
    )
    got2 = client.get(f"{KM}/secrets/{ref2.rsplit('/', 1)[1]}/payload", headers=who("p1"))
    assert got2.content == blob


def test_bad_input_is_400_in_barbicans_shape_without_the_payload(client: TestClient) -> None:
    secret = "s3cr3t-" + "z" * 20
    for body in (
        {"payload": secret},  # no content type
        {"payload": secret, "payload_content_type": "application/octet-stream"},  # no encoding
        {
            "payload": secret,
            "payload_content_type": "application/octet-stream",
            "payload_content_encoding": "base64",
        },  # not base64
        {"payload": secret, "payload_content_type": "image/png"},
        {"payload": secret, "payload_content_type": "text/plain", "bogus": 1},
        {"payload": "", "payload_content_type": "text/plain"},
        {"payload": secret, "payload_content_type": "text/plain", "bit_length": "many"},
    ):
        got = client.post(f"{KM}/secrets", json=body, headers=who("p1"))
        assert got.status_code == 400, (body, got.text)
        assert set(got.json()) == {"code", "title", "description"}
        assert secret not in got.text
    assert client.get(f"{KM}/secrets", headers=who("p1")).json()["total"] == 0


def test_another_project_cannot_read_use_or_delete(client: TestClient) -> None:
    ca = make_ca()
    server = issue(ca, "b.example.com")
    cert = store(
        client, "owner", payload=server.cert_pem.decode(), payload_content_type="text/plain"
    )
    key = store(
        client, "owner", payload=server.key_pem().decode(), payload_content_type="text/plain"
    )
    sid = key.rsplit("/", 1)[1]
    for project, roles in (("thief", "member"), ("thief", "admin")):
        h = who(project, roles)
        assert client.get(f"{KM}/secrets/{sid}", headers=h).status_code == 404
        assert client.get(f"{KM}/secrets/{sid}/payload", headers=h).status_code == 404
        assert client.delete(f"{KM}/secrets/{sid}", headers=h).status_code == 404
        assert client.get(f"{KM}/secrets", headers=h).json()["total"] == 0
        refs = [
            {"name": "certificate", "secret_ref": cert},
            {"name": "private_key", "secret_ref": key},
        ]
        made = client.post(
            f"{KM}/containers", json={"type": "certificate", "secret_refs": refs}, headers=h
        )
        assert made.status_code == 404
    assert client.get(f"{KM}/secrets/{sid}", headers=who("owner", "reader")).status_code == 200
    assert client.delete(f"{KM}/secrets/{sid}", headers=who("owner", "reader")).status_code == 403


def test_certificate_container_with_consumers(client: TestClient) -> None:
    ca = make_ca()
    server = issue(ca, "c.example.com")
    cert = store(client, "p1", payload=server.cert_pem.decode(), payload_content_type="text/plain")
    key = store(client, "p1", payload=server.key_pem().decode(), payload_content_type="text/plain")
    refs = [{"name": "certificate", "secret_ref": cert}, {"name": "private_key", "secret_ref": key}]
    bad = client.post(
        f"{KM}/containers", json={"type": "certificate", "secret_refs": refs[1:]}, headers=who("p1")
    )
    assert bad.status_code == 400 and "certificate" in bad.json()["description"]
    odd = [*refs, {"name": "extra", "secret_ref": cert}]
    assert (
        client.post(
            f"{KM}/containers", json={"type": "certificate", "secret_refs": odd}, headers=who("p1")
        ).status_code
        == 400
    )
    made = client.post(
        f"{KM}/containers/",
        json={"name": "tls", "type": "certificate", "secret_refs": refs},
        headers=who("p1"),
    )
    assert made.status_code == 201
    cid = made.json()["container_ref"].rsplit("/", 1)[1]
    shown = client.get(f"{KM}/containers/{cid}", headers=who("p1")).json()
    assert {r["name"]: r["secret_ref"] for r in shown["secret_refs"]} == {
        "certificate": cert,
        "private_key": key,
    }
    consumer = {"name": "lbaas", "URL": "lbaas://listener/1"}
    for _ in range(2):  # registering twice is one registration
        added = client.post(f"{KM}/containers/{cid}/consumers", json=consumer, headers=who("p1"))
        assert added.status_code == 200
    assert [c["URL"] for c in added.json()["consumers"]] == ["lbaas://listener/1"]
    removed = client.request(
        "DELETE", f"{KM}/containers/{cid}/consumers", json=consumer, headers=who("p1")
    )
    assert removed.status_code == 200 and removed.json()["consumers"] == []
    # a secret held by a container is not deleted from under it
    assert (
        client.delete(f"{KM}/secrets/{key.rsplit('/', 1)[1]}", headers=who("p1")).status_code == 409
    )
    listed = client.get(f"{KM}/containers?type=certificate", headers=who("p1")).json()
    assert listed["total"] == 1
    assert client.delete(f"{KM}/containers/{cid}", headers=who("p1")).status_code == 204
    assert (
        client.delete(f"{KM}/secrets/{key.rsplit('/', 1)[1]}", headers=who("p1")).status_code == 204
    )


def test_secret_consumers(client: TestClient) -> None:
    ref = store(client, "p1", payload="x", payload_content_type="text/plain")
    sid = ref.rsplit("/", 1)[1]
    body = {"service": "lbaas", "resource_type": "listener", "resource_id": "l1"}
    got = client.post(f"{KM}/secrets/{sid}/consumers/", json=body, headers=who("p1"))
    assert got.status_code == 200 and got.json()["consumers"] == [body]
    assert client.get(f"{KM}/secrets/{sid}/consumers", headers=who("p1")).json()["total"] == 1
    gone = client.request("DELETE", f"{KM}/secrets/{sid}/consumers", json=body, headers=who("p1"))
    assert gone.json()["consumers"] == []
    missing = client.request(
        "DELETE", f"{KM}/secrets/{sid}/consumers", json=body, headers=who("p1")
    )
    assert missing.status_code == 404
