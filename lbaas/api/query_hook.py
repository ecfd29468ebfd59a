"""The page parameters Octavia checks before any handler runs, and the shape it refuses in.

Octavia builds its pagination helper in a pecan hook (``QueryParametersHook``) for every
GET that reached a controller, before the controller runs: before the policy check, the
object lookup and the filters. A ``limit`` that is neither an integer nor ``infinite``,
and a sort direction other than ``asc``/``desc`` (of ``sort=key:dir`` or of
``sort_dir`` beside ``sort_key``), raise there, outside WSME, so pecan answers them in its
own body, ``{"code": 400, "title": "Bad Request", "description": "<message>"}``, not the
fault body. A ``sort`` item with two colons is a bad sort key there (its message quotes
the split item as a Python list). An unknown sort key or marker is found later, inside
the handler, and keeps the fault body (``listing``).

Octavia's parsing is followed to the letter: a direction is lowered before it is
checked (and quoted lowered), nothing is stripped, ``sort`` wins over ``sort_key``, and
directions beyond the keys of ``sort_key`` are never looked at.
"""

from __future__ import annotations

from starlette.requests import Request

from lbaas.errors import InvalidInput

DIRECTIONS = ("asc", "desc")


class HookRefused(InvalidInput):
    """A 400 Octavia answers from its pecan hook: ``{"code", "title", "description"}``."""


def parse_limit(raw: str | None, max_limit: int) -> int | None:
    """The page size ``limit`` asks for (None: no limit), capped at ``max_limit`` (0: none)."""
    if raw is None:
        return max_limit if max_limit > 0 else None
    if raw == "infinite":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise HookRefused(f"Supplied pagination limit '{raw}' is not valid.") from None
    if value < 1:
        return None
    return min(value, max_limit) if max_limit > 0 else value


def _direction(text: str) -> bool:
    """True for ascending; HookRefused unless ``asc`` or ``desc`` in any case."""
    lowered = text.lower()
    if lowered not in DIRECTIONS:
        raise HookRefused(f"Supplied sort direction '{lowered}' is not valid.")
    return lowered == "asc"


def parse_sort(request: Request) -> list[tuple[str, bool]]:
    """(key, ascending) pairs from ``sort``, else ``sort_key``/``sort_dir``; keys unchecked."""
    params = request.query_params
    pairs: list[tuple[str, bool]] = []
    if params.get("sort"):
        for item in params["sort"].split(","):
            parts = item.split(":")
            if len(parts) > 2:
                raise HookRefused(f"Supplied sort key '{parts}' is not valid.")
            pairs.append((parts[0], _direction(parts[1]) if len(parts) == 2 else True))
    elif params.get("sort_key"):
        keys = params["sort_key"].split(",")
        directions = params["sort_dir"].split(",") if params.get("sort_dir") else []
        directions += ["asc"] * (len(keys) - len(directions))
        pairs = [(key, _direction(d)) for key, d in zip(keys, directions, strict=False)]
    return pairs


def query_parameters_hook(request: Request) -> None:
    """A router dependency: Octavia's checks of a GET's ``limit`` and sort directions."""
    if request.method == "GET":
        parse_limit(request.query_params.get("limit"), 0)
        parse_sort(request)
