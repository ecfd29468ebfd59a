"""The data-driven CRUD test base every resource's API tests derive from (netbox-style).

A resource declares where it lives, how to build its parents and a valid body, what an
update looks like and which fields are create-only; it inherits the tests of create, show,
list (pagination, links, ``fields=``, filters, sorting, tags), update, delete, 404, the
409 while its load balancer is PENDING_*, Octavia's error shape on bad input with the
database unchanged afterwards, and RBAC per role.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from tests.support.api_client import Api
from tests.support.control_plane import noop_of

FAULT_KEYS = {"faultcode", "faultstring", "debuginfo"}


def assert_fault(response: Any, status: int, contains: str = "") -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == FAULT_KEYS, body
    assert body["faultcode"] == ("Client" if status < 500 else "Server")
    assert contains in body["faultstring"], body["faultstring"]


def assert_neutron_fault(
    response: Any, status: int, contains: str = "", kind: str | None = None
) -> None:
    """Neutron's error body (the Networking routes'), with ``kind`` as its ``type``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"NeutronError"}, body
    error = body["NeutronError"]
    assert set(error) == {"type", "message", "detail"} and error["detail"] == "", error
    assert error["type"] == (kind or error["type"]) and error["type"], error
    assert contains in error["message"], error["message"]


def assert_pecan(response: Any, status: int, description: str | None) -> None:
    """Octavia's answers from outside its WSME handlers: pecan's ``code``/``title``/
    ``description`` (a path or method no controller serves, a GET's bad ``limit`` or sort
    direction, which its query hook rejects)."""
    assert response.status_code == status, response.text
    title = {400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}[status]
    assert response.json() == {"code": status, "title": title, "description": description}


class ResourceTests:
    """Subclass, set the class attributes, implement ``parents`` and ``body``."""

    wrapper: ClassVar[str]
    collection: ClassVar[str]
    links_key: ClassVar[str]
    update_body: ClassVar[dict[str, Any]] = {"name": "renamed"}
    create_only: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()
    tag_capable: ClassVar[bool] = True
    name_field: ClassVar[str | None] = "name"

    # -- what each resource provides --------------------------------------------------

    def parents(self, api: Api) -> dict[str, Any]:
        """Create the parent objects; must return at least {"lb_id": ...}."""
        raise NotImplementedError

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        """A valid create body, distinct for each n (ports, addresses, names)."""
        raise NotImplementedError

    def collection_path(self, ctx: dict[str, Any]) -> str:
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------------

    def _create(self, api: Api, ctx: dict[str, Any], n: int = 0, **extra: Any) -> dict[str, Any]:
        r = api.post(self.collection_path(ctx), {self.wrapper: {**self.body(ctx, n), **extra}})
        assert r.status_code == 201, r.text
        obj = dict(r.json()[self.wrapper])
        api.wait_lb(ctx["lb_id"])
        return obj

    def _path(self, ctx: dict[str, Any], obj_id: str) -> str:
        return f"{self.collection_path(ctx)}/{obj_id}"

    def _snapshot(self, api: Api, ctx: dict[str, Any]) -> Any:
        return api.get(self.collection_path(ctx)).json()[self.collection]

    # -- create / show / list -------------------------------------------------------------

    def test_create_is_pending_then_active(self, api: Api) -> None:
        ctx = self.parents(api)
        r = api.post(self.collection_path(ctx), {self.wrapper: self.body(ctx, 0)})
        assert r.status_code == 201, r.text
        assert list(r.json()) == [self.wrapper]
        obj = r.json()[self.wrapper]
        assert obj["provisioning_status"] == "PENDING_CREATE"
        assert obj["project_id"] == obj["tenant_id"] == "p-alpha"
        api.wait_lb(ctx["lb_id"])
        shown = api.get(self._path(ctx, obj["id"])).json()[self.wrapper]
        assert shown["provisioning_status"] == "ACTIVE"
        assert shown["created_at"] and "+" not in shown["created_at"]

    def test_list_pagination_and_links(self, api: Api) -> None:
        ctx = self.parents(api)
        made = [self._create(api, ctx, n)["id"] for n in range(3)]
        r = api.get(self.collection_path(ctx), params={"limit": 2})
        page = r.json()
        assert [o["id"] for o in page[self.collection]] == made[:2]
        links = {link["rel"]: link["href"] for link in page[self.links_key]}
        assert "next" in links and "previous" not in links
        second = api.get(links["next"].replace("http://testserver", "")).json()
        assert [o["id"] for o in second[self.collection]] == made[2:]
        assert {link["rel"] for link in second[self.links_key]} == {"previous"}
        back = api.get(
            self.collection_path(ctx), params={"marker": made[2], "page_reverse": "True"}
        ).json()
        assert [o["id"] for o in back[self.collection]] == made[:2]
        assert_fault(api.get(self.collection_path(ctx), params={"marker": "nope"}), 400, "marker")
        refused = api.get(self.collection_path(ctx), params={"limit": "x"})
        assert_pecan(refused, 400, "Supplied pagination limit 'x' is not valid.")

    def test_fields_filters_and_sort(self, api: Api) -> None:
        ctx = self.parents(api)
        objs = [self._create(api, ctx, n) for n in range(2)]
        listed = api.get(self.collection_path(ctx), params={"fields": ["id"]}).json()
        assert all(set(o) == {"id"} for o in listed[self.collection])
        one = api.get(self.collection_path(ctx), params={"id": objs[1]["id"]}).json()
        assert [o["id"] for o in one[self.collection]] == [objs[1]["id"]]
        desc = api.get(self.collection_path(ctx), params={"sort": "created_at:desc,id:desc"})
        assert len(desc.json()[self.collection]) == 2
        assert_fault(api.get(self.collection_path(ctx), params={"bogus": "1"}), 400, "invalid")
        assert_fault(api.get(self.collection_path(ctx), params={"sort": "bogus"}), 400, "sort key")
        refused = api.get(self.collection_path(ctx), params={"sort": "id:UP"})
        assert_pecan(refused, 400, "Supplied sort direction 'up' is not valid.")
        shown = api.get(self._path(ctx, objs[0]["id"]), params={"fields": ["id"]}).json()
        assert shown == {self.wrapper: {"id": objs[0]["id"]}}
        # A time read back from the API finds its object (shown to the second, stored finer).
        created = api.get(self._path(ctx, objs[0]["id"])).json()[self.wrapper]["created_at"]
        same = api.get(self.collection_path(ctx), params={"created_at": created}).json()
        assert objs[0]["id"] in [o["id"] for o in same[self.collection]]
        later = api.get(self.collection_path(ctx), params={"created_at": "2001-01-01T00:00:00"})
        assert later.json()[self.collection] == []

    def test_tag_filters(self, api: Api) -> None:
        if not self.tag_capable:
            pytest.skip("resource has no tags")
        ctx = self.parents(api)
        a = self._create(api, ctx, 0, tags=["red", "blue"])
        b = self._create(api, ctx, 1, tags=["red"])
        c = self._create(api, ctx, 2, tags=[])
        path = self.collection_path(ctx)

        def ids(params: dict[str, str]) -> set[str]:
            return {o["id"] for o in api.get(path, params=params).json()[self.collection]}

        assert ids({"tags": "red,blue"}) == {a["id"]}
        assert ids({"tags-any": "blue,red"}) == {a["id"], b["id"]}
        assert ids({"not-tags": "red,blue"}) == {b["id"], c["id"]}
        assert ids({"not-tags-any": "blue"}) == {b["id"], c["id"]}

    # -- update / delete ------------------------------------------------------------------

    def test_update_returns_200_and_converges(self, api: Api) -> None:
        ctx = self.parents(api)
        obj = self._create(api, ctx)
        r = api.put(self._path(ctx, obj["id"]), {self.wrapper: self.update_body})
        assert r.status_code == 200, r.text
        assert r.json()[self.wrapper]["provisioning_status"] == "PENDING_UPDATE"
        api.wait_lb(ctx["lb_id"])
        shown = api.get(self._path(ctx, obj["id"])).json()[self.wrapper]
        for key, value in self.update_body.items():
            assert shown[key] == value, key
        assert shown["provisioning_status"] == "ACTIVE"

    def test_create_only_fields_rejected_on_put(self, api: Api) -> None:
        ctx = self.parents(api)
        obj = self._create(api, ctx)
        for field in self.create_only:
            r = api.put(self._path(ctx, obj["id"]), {self.wrapper: {field: obj.get(field)}})
            assert_fault(r, 400, "Unknown attribute")

    def test_delete_then_404(self, api: Api) -> None:
        ctx = self.parents(api)
        obj = self._create(api, ctx)
        r = api.delete(self._path(ctx, obj["id"]))
        assert r.status_code == 204, r.text
        api.wait_lb(ctx["lb_id"])
        assert_fault(api.get(self._path(ctx, obj["id"])), 404, "not found")
        assert obj["id"] not in {o["id"] for o in self._snapshot(api, ctx)}

    def test_unknown_id_is_404(self, api: Api) -> None:
        ctx = self.parents(api)
        missing = "00000000-0000-4000-8000-00000000dead"
        assert_fault(api.get(self._path(ctx, missing)), 404, "not found")
        assert_fault(api.put(self._path(ctx, missing), {self.wrapper: {}}), 404, "not found")
        assert_fault(api.delete(self._path(ctx, missing)), 404, "not found")

    # -- bad input --------------------------------------------------------------------------

    def test_bad_input_is_400_and_changes_nothing(self, api: Api) -> None:
        ctx = self.parents(api)
        before = self._snapshot(api, ctx)
        r = api.post(self.collection_path(ctx), {self.wrapper: {**self.body(ctx, 0), "bogus": 1}})
        assert_fault(r, 400, f"Unknown attribute for argument {self.argument}: bogus")
        for field in self.required:
            body = self.body(ctx, 0)
            body.pop(field)
            r = api.post(self.collection_path(ctx), {self.wrapper: body})
            assert_fault(r, 400, f"{field}. Value: 'None'. Mandatory field missing.")
        not_json = api.post(
            self.collection_path(ctx),
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
        assert_fault(not_json, 400, "Request is not in valid JSON format")
        plain = api.post(
            self.collection_path(ctx),
            content=json.dumps({self.wrapper: self.body(ctx, 0)}).encode(),
            headers={"Content-Type": "text/plain"},
        )
        assert_fault(plain, 415, "Unknown mimetype: text/plain")
        assert_fault(api.post(self.collection_path(ctx), {"wrong": {}}), 400)
        assert self._snapshot(api, ctx) == before
        status = api.get(f"/v2/lbaas/loadbalancers/{ctx['lb_id']}").json()["loadbalancer"]
        assert status["provisioning_status"] == "ACTIVE"

    # -- locking ------------------------------------------------------------------------------

    def test_409_while_load_balancer_pending(self, api: Api, plane: Any) -> None:
        ctx = self.parents(api)
        obj = self._create(api, ctx, 0)
        noop_of(plane).gate.clear()  # the update's converge waits until the checks are done
        try:
            r = api.put(self._path(ctx, obj["id"]), {self.wrapper: self.update_body})
            assert r.status_code == 200
            r = api.put(self._path(ctx, obj["id"]), {self.wrapper: self.update_body})
            assert_fault(r, 409, "immutable")
            r = api.post(self.collection_path(ctx), {self.wrapper: self.body(ctx, 1)})
            assert_fault(r, 409)
            assert_fault(api.delete(self._path(ctx, obj["id"])), 409)
        finally:
            noop_of(plane).gate.set()
        api.wait_lb(ctx["lb_id"])

    # -- RBAC -----------------------------------------------------------------------------------

    def test_rbac(self, api: Api, admin: Api) -> None:
        ctx = self.parents(api)
        obj = self._create(api, ctx)
        reader = api.as_("p-alpha", "reader")
        stranger = api.as_("p-beta", "member")
        nobody = api.as_("p-alpha", "")
        path = self._path(ctx, obj["id"])
        assert reader.get(path).status_code == 200
        assert_fault(reader.put(path, {self.wrapper: self.update_body}), 403, "Policy")
        assert_fault(reader.delete(path), 403)
        assert_fault(reader.post(self.collection_path(ctx), {self.wrapper: self.body(ctx, 1)}), 403)
        assert_fault(stranger.get(path), 403)
        assert_fault(stranger.put(path, {self.wrapper: self.update_body}), 403)
        assert_fault(nobody.get(path), 403)
        assert admin.get(path).status_code == 200
        ids = {o["id"] for o in admin.get(self.collection_path(ctx)).json()[self.collection]}
        assert obj["id"] in ids
        stranger_list = stranger.get(self.collection_path(ctx))
        if stranger_list.status_code == 200:
            assert obj["id"] not in {o["id"] for o in stranger_list.json()[self.collection]}
        else:
            assert stranger_list.status_code == 403
