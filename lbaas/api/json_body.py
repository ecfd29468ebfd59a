"""Request bodies as JSON, refusing strings that no store or data plane can hold.

JSON can carry ``\\u0000`` and unpaired surrogates (``"\\ud800"``), and Python's parser
hands both over as ``str``. PostgreSQL refuses NUL in text, UTF-8 cannot encode a lone
surrogate, HAProxy cannot read either: left alone, they reached the database and came
back as 500s. Every body is checked once, right after parsing, so no schema field or
handler can forget it; the refusal is a 400 naming the attribute.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException
from starlette.requests import Request


def _storable(text: str) -> bool:
    if text.isascii():
        return "\x00" not in text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def unstorable_field(value: Any, field: str = "body") -> str | None:
    """The name of the first attribute holding a string that cannot be stored, if any."""
    if isinstance(value, str):
        return None if _storable(value) else field
    if isinstance(value, list):
        for item in value:
            found = unstorable_field(item, field)
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if not _storable(key):
                return field
            found = unstorable_field(item, key)
            if found is not None:
                return found
    return None


class CheckedJsonRequest(Request):
    """A request whose ``json()`` refuses NUL characters and unpaired surrogates."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            value = json.loads(await self.body())
            field = unstorable_field(value)
            if field is not None:
                # FastAPI passes HTTPException through (other errors become a generic 400);
                # the value itself is not echoed: it may not even be encodable.
                raise HTTPException(
                    400,
                    f"Invalid input for field/attribute {field}. Strings may not contain NUL "
                    "characters or unpaired surrogates.",
                )
            self._json = value
        return self._json
