"""Octavia's list parameters: limit/marker/page_reverse, sort, fields, filters and tags.

Parsing is strict where Octavia is strict (unknown filter keys, bad sort keys and
markers are 400s with its messages; limits and sort directions are checked earlier, for
every GET, by ``query_hook``, in pecan's body) and lenient where it is
lenient (boolean filters, ``fields`` names it does not know). Links follow the reference:
``next`` whenever a page is full, ``previous`` whenever a marker was given, filters and
``fields`` not carried over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.requests import Request
from starlette.responses import Response

from lbaas.api.query_hook import parse_limit, parse_sort
from lbaas.db.listing import BadMarker, ListQuery, ListSpec, list_rows, timestamp_filters
from lbaas.db.loadbalancers.loadbalancer_json import PageRenderer
from lbaas.db.session import Connection, Session
from lbaas.errors import InvalidInput

RESERVED = {
    "limit",
    "marker",
    "page_reverse",
    "sort",
    "sort_key",
    "sort_dir",
    "fields",
    "tags",
    "tags-any",
    "not-tags",
    "not-tags-any",
}
TRUE_WORDS = {"true", "1", "yes", "on", "y", "t"}


@dataclass(frozen=True)
class ListParams:
    query: ListQuery
    fields: tuple[str, ...]
    sort_text: str | None
    sort_key_text: str | None
    sort_dir_text: str | None


def _split_multi(request: Request, key: str) -> list[str]:
    values: list[str] = []
    for raw in request.query_params.getlist(key):
        values.extend(v.strip() for v in raw.split(",") if v.strip())
    return values


def _parse_sort(request: Request, spec: ListSpec) -> list[tuple[str, bool]]:
    sort = parse_sort(request)
    for key, _ascending in sort:
        if key not in spec.columns:
            raise InvalidInput(f"Supplied sort key '{key}' is not valid.")
    return sort


_BAD_FILTER = "One or more arguments are either duplicate or invalid"
# Integer columns are 32-bit on PostgreSQL; a larger value could not be bound (500).
_INT_RANGE = range(-(2**31), 2**31)


def _int_filter(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(_BAD_FILTER) from None
    if value not in _INT_RANGE:
        raise InvalidInput(_BAD_FILTER)
    return value


def _timestamp_filter(raw: str) -> datetime:
    """An ISO 8601 time, as stored (naive UTC); PostgreSQL could not compare anything else."""
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise InvalidInput(_BAD_FILTER) from None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def parse_list_params(
    request: Request,
    spec: ListSpec,
    max_limit: int,
    bool_filters: frozenset[str] = frozenset(),
    int_filters: frozenset[str] = frozenset(),
    extra_allowed: frozenset[str] = frozenset(),
) -> ListParams:
    """Turn the query string into a ListQuery; raise InvalidInput on what Octavia refuses."""
    params = request.query_params
    filters: dict[str, Any] = {}
    for key in params.keys():
        if key in RESERVED or key in extra_allowed:
            continue
        if key not in spec.columns and key not in spec.constants:
            raise InvalidInput("One or more arguments are either duplicate or invalid")
        raw = params[key]
        if key in bool_filters:
            filters[key] = raw.strip().lower() in TRUE_WORDS
        elif key in int_filters:
            filters[key] = _int_filter(raw)
        elif key in timestamp_filters(spec):
            filters[key] = _timestamp_filter(raw)
        else:
            filters[key] = raw
    tag_keys = ("tags", "tags-any", "not-tags", "not-tags-any")
    if not spec.tag_capable and any(k in params for k in tag_keys):
        raise InvalidInput("One or more arguments are either duplicate or invalid")
    query = ListQuery(
        filters=filters,
        tags_all=_split_multi(request, "tags"),
        tags_any=_split_multi(request, "tags-any"),
        not_tags_all=_split_multi(request, "not-tags"),
        not_tags_any=_split_multi(request, "not-tags-any"),
        sort=_parse_sort(request, spec),
        limit=parse_limit(params.get("limit"), max_limit),
        marker=params.get("marker"),
        page_reverse=params.get("page_reverse") == "True",
    )
    return ListParams(
        query=query,
        fields=tuple(params.getlist("fields")),
        sort_text=params.get("sort"),
        sort_key_text=params.get("sort_key"),
        sort_dir_text=params.get("sort_dir"),
    )


def select_fields(obj: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """Keep only the requested attributes (``fields=`` on lists and single GETs)."""
    if not fields:
        return obj
    return {k: v for k, v in obj.items() if k in fields}


def _base_url(request: Request, base_uri: str | None) -> str:
    if base_uri:
        return base_uri.rstrip("/") + request.url.path
    return str(request.url.replace(query=""))


def page_links(
    request: Request, params: ListParams, ids: Sequence[str], base_uri: str | None
) -> list[dict[str, str]]:
    links: list[dict[str, str]] = []
    limit = params.query.limit
    if limit is None or not ids and params.query.marker is None:
        return links
    base = _base_url(request, base_uri)
    common: list[tuple[str, str]] = [("limit", str(limit))]
    if params.sort_text:
        common.append(("sort", params.sort_text))
    if params.sort_key_text:
        common.append(("sort_key", params.sort_key_text))
    if params.sort_dir_text:
        common.append(("sort_dir", params.sort_dir_text))
    if len(ids) >= limit:
        links.append({"href": f"{base}?{urlencode([*common, ('marker', ids[-1])])}", "rel": "next"})
    if params.query.marker is not None and ids:
        query = urlencode([*common, ("marker", ids[0]), ("page_reverse", "True")])
        links.append({"href": f"{base}?{query}", "rel": "previous"})
    return links


def list_page(
    session: Session,
    request: Request,
    spec: ListSpec,
    params: ListParams,
    render: Callable[[Session, list[Any]], list[dict[str, Any]]],
    collection: str,
    links_key: str | None,
    base_uri: str | None,
    conditions: Sequence[Any] = (),
) -> dict[str, Any]:
    """Run the query and build ``{collection: [...], links_key: [...]}``."""
    query = _with_conditions(params.query, conditions)
    try:
        rows = list_rows(session, spec, query)
    except BadMarker:
        raise _bad_marker(query) from None
    objects = render(session, rows)
    body: dict[str, Any] = {collection: [select_fields(o, params.fields) for o in objects]}
    if links_key is not None:
        ids = [str(getattr(r, spec.id_column.key)) for r in rows]
        body[links_key] = page_links(request, params, ids, base_uri)
    return body


def list_page_json(
    conn: Connection,
    request: Request,
    spec: ListSpec,
    params: ListParams,
    render: PageRenderer,
    collection: str,
    links_key: str,
    base_uri: str | None,
    conditions: Sequence[Any] = (),
) -> Response:
    """``list_page`` for objects the database renders to JSON itself: the API only joins
    the finished objects (no ``fields=`` selection; callers use ``list_page`` for that)."""
    query = _with_conditions(params.query, conditions)
    try:
        ids, objects = render(conn, spec, query)
    except BadMarker:
        raise _bad_marker(query) from None
    links = orjson.dumps(page_links(request, params, ids, base_uri))
    body = b"".join(
        (
            b'{"' + collection.encode() + b'":[',
            ",".join(objects).encode(),
            b'],"' + links_key.encode() + b'":',
            links,
            b"}",
        )
    )
    return Response(body, media_type="application/json")


def _with_conditions(query: ListQuery, conditions: Sequence[Any]) -> ListQuery:
    if not conditions:
        return query
    return ListQuery(**{**query.__dict__, "conditions": (*query.conditions, *conditions)})


def _bad_marker(query: ListQuery) -> InvalidInput:
    return InvalidInput(f"Supplied pagination marker '{query.marker}' is not valid.")


def filter_mapping(spec_columns: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(spec_columns)
