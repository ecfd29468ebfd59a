"""The database-rendered load balancer list matches the Python view, object by object.

``GET /v2/lbaas/loadbalancers`` without ``fields=`` and ``GET …/{id}`` are rendered by SQLite
or PostgreSQL (``lbaas/db/loadbalancers/loadbalancer_json.py``); ``fields=`` lists, and the
objects answered to writes, go through ``lbaas/api/views/loadbalancer.py``. Every value kind is covered here: null and set
strings, booleans both ways, timestamps with and without ``updated_at``, stored JSON
lists, tags out of order, live and deleted children.
"""

from __future__ import annotations

from typing import Any

from tests.support.api_client import Api

LBS = "/v2/lbaas/loadbalancers"


def _normalised(obj: dict[str, Any]) -> dict[str, Any]:
    """Child id lists carry no order in the API; compare them as sorted lists."""
    out = dict(obj)
    for key in ("listeners", "pools"):
        out[key] = sorted(out[key], key=lambda child: str(child["id"]))
    return out


def _varied_load_balancers(api: Api) -> list[str]:
    plain = api.create_lb()
    named = api.create_lb(
        name='web "front" ü', description="line\nbreak", tags=["zeta", "alpha", "mid"]
    )
    disabled = api.create_lb(admin_state_up=False, name="off")
    listener = api.create_listener(named["id"], protocol_port=8080)
    api.create_pool(named["id"], listener_id=listener["id"])
    api.create_pool(named["id"])
    gone = api.create_listener(disabled["id"], protocol_port=81)
    r = api.delete(f"/v2/lbaas/listeners/{gone['id']}")
    assert r.status_code == 204, r.text
    api.wait_lb(disabled["id"])
    r = api.put(f"{LBS}/{plain['id']}", {"loadbalancer": {"name": "renamed"}})
    assert r.status_code == 200, r.text
    api.wait_lb(plain["id"])
    return [plain["id"], named["id"], disabled["id"]]


def test_list_objects_equal_show_objects(api: Api) -> None:
    ids = _varied_load_balancers(api)
    r = api.get(LBS)
    assert r.status_code == 200, r.text
    listed = {lb["id"]: lb for lb in r.json()["loadbalancers"]}
    assert set(ids) <= set(listed)
    every_field = [("fields", key) for key in listed[ids[0]]]
    r = api.get(LBS, params=every_field)
    assert r.status_code == 200, r.text
    viewed = {lb["id"]: lb for lb in r.json()["loadbalancers"]}
    for lb_id in ids:
        shown = api.get(f"{LBS}/{lb_id}").json()["loadbalancer"]
        assert _normalised(listed[lb_id]) == _normalised(shown) == _normalised(viewed[lb_id])
    named = listed[ids[1]]
    assert named["tags"] == ["alpha", "mid", "zeta"]
    assert len(named["listeners"]) == 1 and len(named["pools"]) == 2
    assert listed[ids[2]]["listeners"] == []
    assert listed[ids[2]]["admin_state_up"] is False
    assert listed[ids[0]]["updated_at"] is not None


def test_fields_list_takes_the_python_path_and_agrees(api: Api) -> None:
    ids = _varied_load_balancers(api)
    full = {lb["id"]: lb for lb in api.get(LBS).json()["loadbalancers"]}
    r = api.get(LBS, params=[("fields", "id"), ("fields", "tags"), ("fields", "listeners")])
    assert r.status_code == 200, r.text
    for lb in r.json()["loadbalancers"]:
        assert set(lb) == {"id", "tags", "listeners"}
        assert lb["tags"] == full[lb["id"]]["tags"]
        assert sorted(x["id"] for x in lb["listeners"]) == sorted(
            x["id"] for x in full[lb["id"]]["listeners"]
        )
    assert set(ids) <= set(full)


def test_pagination_links_from_the_rendered_page(api: Api) -> None:
    ids = _varied_load_balancers(api)
    r = api.get(LBS, params={"limit": 2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["loadbalancers"]) == 2
    (link,) = [x for x in body["loadbalancers_links"] if x["rel"] == "next"]
    assert f"marker={body['loadbalancers'][-1]['id']}" in link["href"]
    rest = api.get(LBS, params={"limit": 2, "marker": body["loadbalancers"][-1]["id"]})
    seen = [lb["id"] for lb in body["loadbalancers"] + rest.json()["loadbalancers"]]
    assert sorted(seen) == sorted(ids)
