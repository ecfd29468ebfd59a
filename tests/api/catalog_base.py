"""A data-driven test base for the admin-managed global objects (netbox-style).

``ResourceTests`` is shaped by the load-balancer tree (project ownership, PENDING
statuses, waiting for ACTIVE). Flavors, availability zones, their profiles and quota
records have none of that: they are global, written by admins, synchronous, and some are
keyed by something other than ``id``. Two bases cover them:

* ``CatalogListTests`` — list behaviour only (pagination and links, ``fields=``,
  filters, sorting, the 400s of bad list parameters). A resource provides ``make``.
* ``CatalogTests`` — the full CRUD set on top: create with every field, show, update,
  create-only fields refused on PUT, delete then 404, unknown key 404, bad input is a
  400 in Octavia's shape with nothing stored, and RBAC per role.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tests.api.resource_base import assert_fault, assert_pecan
from tests.support.api_client import Api

MISSING = "00000000-0000-4000-8000-00000000dead"


class CatalogListTests:
    """Subclass, set the class attributes and implement ``make``."""

    path: ClassVar[str]
    collection: ClassVar[str]
    links_key: ClassVar[str]
    key: ClassVar[str] = "id"  # what markers and single-object paths use
    filter_field: ClassVar[str] = "name"

    def make(self, admin: Api, n: int) -> dict[str, Any]:
        """Create the n-th object as admin; return it as the API rendered it."""
        raise NotImplementedError

    def _keys(self, admin: Api, params: dict[str, Any]) -> list[Any]:
        r = admin.get(self.path, params=params)
        assert r.status_code == 200, r.text
        return [o[self.key] for o in r.json()[self.collection]]

    def test_default_order_is_by_key_not_creation(self, admin: Api) -> None:
        """Octavia sorts by ``created_at`` and id where a table has them; these objects show
        no ``created_at`` in its API (its tables have none), so by id (or name) alone. Five
        random ids come out in creation order one time in 120."""
        made = [self.make(admin, n)[self.key] for n in range(5)]
        assert self._keys(admin, {}) == sorted(made)

    def test_list_pagination_and_links(self, admin: Api) -> None:
        made = sorted(self.make(admin, n)[self.key] for n in range(3))
        page = admin.get(self.path, params={"limit": 2}).json()
        assert [o[self.key] for o in page[self.collection]] == made[:2]
        links = {link["rel"]: link["href"] for link in page[self.links_key]}
        assert set(links) == {"next"}
        second = admin.get(links["next"].replace("http://testserver", "")).json()
        assert [o[self.key] for o in second[self.collection]] == made[2:]
        assert {link["rel"] for link in second[self.links_key]} == {"previous"}
        back = self._keys(admin, {"marker": made[2], "page_reverse": "True"})
        assert back == made[:2]
        assert self._keys(admin, {"marker": made[0]}) == made[1:]
        assert admin.get(self.path).json()[self.links_key] == []
        assert_fault(admin.get(self.path, params={"marker": "nope"}), 400, "marker 'nope'")
        refused = admin.get(self.path, params={"limit": "x"})
        assert_pecan(refused, 400, "Supplied pagination limit 'x' is not valid.")

    def test_fields_filters_and_sort(self, admin: Api) -> None:
        objs = sorted((self.make(admin, n) for n in range(2)), key=lambda o: str(o[self.key]))
        listed = admin.get(self.path, params={"fields": [self.key]}).json()[self.collection]
        assert listed == [{self.key: o[self.key]} for o in objs]
        wanted = objs[1][self.filter_field]
        hits = self._keys(admin, {self.filter_field: wanted})
        assert hits == [objs[1][self.key]]
        desc = self._keys(admin, {"sort": f"{self.key}:desc"})
        assert desc == sorted((o[self.key] for o in objs), reverse=True)
        legacy = self._keys(admin, {"sort_key": self.key, "sort_dir": "desc"})
        assert legacy == desc
        assert_fault(admin.get(self.path, params={"bogus": "1"}), 400, "duplicate or invalid")
        assert_fault(admin.get(self.path, params={"tags": "x"}), 400, "duplicate or invalid")
        assert_fault(admin.get(self.path, params={"sort": "bogus"}), 400, "sort key 'bogus'")
        refused = admin.get(self.path, params={"sort": f"{self.key}:up"})
        assert_pecan(refused, 400, "Supplied sort direction 'up' is not valid.")


class CatalogTests(CatalogListTests):
    """Full CRUD for an admin-written global object; implement ``setup`` and ``body``."""

    wrapper: ClassVar[str]
    response_keys: ClassVar[frozenset[str]]
    label: ClassVar[str]  # "<label> <key> not found."
    required: ClassVar[tuple[str, ...]] = ()
    create_only: ClassVar[tuple[str, ...]] = ()
    update_body: ClassVar[dict[str, Any]] = {"name": "renamed"}
    #: Flavors and zones are readable by every reader; profiles only by admins.
    readers_may_read: ClassVar[bool] = False

    def setup(self, admin: Api) -> dict[str, Any]:
        """Create what the objects refer to (profiles); returned as ``ctx``."""
        return {}

    def body(self, ctx: dict[str, Any], n: int) -> dict[str, Any]:
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------

    def _ctx(self, admin: Api) -> dict[str, Any]:
        if not hasattr(self, "_context"):
            self._context = self.setup(admin)
        return self._context

    def make(self, admin: Api, n: int) -> dict[str, Any]:
        r = admin.post(self.path, {self.wrapper: self.body(self._ctx(admin), n)})
        assert r.status_code == 201, r.text
        return dict(r.json()[self.wrapper])

    def _one(self, obj: dict[str, Any]) -> str:
        return f"{self.path}/{obj[self.key]}"

    def _snapshot(self, admin: Api) -> Any:
        return admin.get(self.path).json()[self.collection]

    # -- create / show ----------------------------------------------------------------

    def test_create_returns_every_field(self, admin: Api) -> None:
        body = self.body(self._ctx(admin), 0)
        r = admin.post(self.path, {self.wrapper: body})
        assert r.status_code == 201, r.text
        assert list(r.json()) == [self.wrapper]
        obj = r.json()[self.wrapper]
        assert set(obj) == self.response_keys
        for field, value in body.items():
            assert obj[field] == value, field
        shown = admin.get(self._one(obj))
        assert shown.status_code == 200
        assert shown.json() == {self.wrapper: obj}
        narrowed = admin.get(self._one(obj), params={"fields": [self.key]}).json()
        assert narrowed == {self.wrapper: {self.key: obj[self.key]}}

    # -- update / delete --------------------------------------------------------------

    def test_update_returns_200(self, admin: Api) -> None:
        obj = self.make(admin, 0)
        r = admin.put(self._one(obj), {self.wrapper: self.update_body})
        assert r.status_code == 200, r.text
        updated = r.json()[self.wrapper]
        assert updated == {**obj, **self.update_body}
        assert admin.get(self._one(obj)).json()[self.wrapper] == updated
        unchanged = admin.put(self._one(obj), {self.wrapper: {}})
        assert unchanged.status_code == 200
        assert unchanged.json()[self.wrapper] == updated

    def test_create_only_fields_rejected_on_put(self, admin: Api) -> None:
        obj = self.make(admin, 0)
        for field in self.create_only:
            r = admin.put(self._one(obj), {self.wrapper: {field: obj[field]}})
            assert_fault(r, 400, f"Unknown attribute for argument {self.argument}: {field}")

    def test_delete_then_404(self, admin: Api) -> None:
        obj = self.make(admin, 0)
        assert admin.delete(self._one(obj)).status_code == 204
        assert_fault(admin.get(self._one(obj)), 404, f"{self.label} {obj[self.key]} not found.")
        assert obj[self.key] not in {o[self.key] for o in self._snapshot(admin)}
        assert_fault(admin.delete(self._one(obj)), 404)

    def test_unknown_key_is_404(self, admin: Api) -> None:
        path = f"{self.path}/{MISSING}"
        message = f"{self.label} {MISSING} not found."
        assert_fault(admin.get(path), 404, message)
        assert_fault(admin.put(path, {self.wrapper: {}}), 404, message)
        assert_fault(admin.delete(path), 404, message)

    # -- bad input ----------------------------------------------------------------------

    def test_bad_input_is_400_and_changes_nothing(self, admin: Api) -> None:
        ctx = self._ctx(admin)
        before = self._snapshot(admin)
        r = admin.post(self.path, {self.wrapper: {**self.body(ctx, 0), "bogus": 1}})
        assert_fault(r, 400, f"Unknown attribute for argument {self.argument}: bogus")
        for field in self.required:
            body = self.body(ctx, 0)
            body.pop(field)
            r = admin.post(self.path, {self.wrapper: body})
            assert_fault(r, 400, f"{field}. Value: 'None'. Mandatory field missing.")
        long_name = {**self.body(ctx, 0), "name": "n" * 256}
        assert_fault(admin.post(self.path, {self.wrapper: long_name}), 400, "maximum character")
        assert_fault(admin.post(self.path, content=b"{not json"), 400)
        assert_fault(admin.post(self.path, {"wrong": {}}), 400)
        assert self._snapshot(admin) == before

    def test_bad_update_changes_nothing(self, admin: Api) -> None:
        obj = self.make(admin, 0)
        r = admin.put(self._one(obj), {self.wrapper: {"bogus": 1}})
        assert_fault(r, 400, f"Unknown attribute for argument {self.argument}: bogus")
        r = admin.put(self._one(obj), {self.wrapper: {"description": "d" * 256}})
        if "description" in self.response_keys:
            assert_fault(r, 400, "maximum character")
        assert admin.get(self._one(obj)).json()[self.wrapper] == obj

    # -- RBAC -------------------------------------------------------------------------------

    def test_rbac(self, api: Api, admin: Api) -> None:
        obj = self.make(admin, 0)
        reader = api.as_("p-alpha", "reader")
        other_admin = api.as_("p-beta", "admin")  # an admin of any project manages them
        nobody = api.as_("p-alpha", "")
        one = self._one(obj)
        for caller in (reader, api):
            if self.readers_may_read:
                assert caller.get(one).status_code == 200
                assert obj[self.key] in {o[self.key] for o in self._list_as(caller)}
            else:
                assert_fault(caller.get(one), 403, "Policy does not allow")
                assert_fault(caller.get(self.path), 403)
            assert_fault(caller.put(one, {self.wrapper: self.update_body}), 403, "Policy")
            assert_fault(caller.delete(one), 403, "Policy")
            body = self.body(self._ctx(admin), 1)
            assert_fault(caller.post(self.path, {self.wrapper: body}), 403, "Policy")
        assert_fault(nobody.get(one), 403)
        assert_fault(nobody.get(self.path), 403)
        assert other_admin.get(one).status_code == 200
        assert admin.get(one).json()[self.wrapper] == obj

    def _list_as(self, caller: Api) -> list[dict[str, Any]]:
        r = caller.get(self.path)
        assert r.status_code == 200, r.text
        return list(r.json()[self.collection])
