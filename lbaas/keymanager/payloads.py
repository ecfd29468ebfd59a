"""Secret payloads as Barbican takes them: content types, encodings, sizes.

A one-step create carries the payload in the JSON body (``text/plain`` as it is, binary
types base64-encoded with ``payload_content_encoding: base64``); a two-step create sends
it later as the raw body of a PUT with its ``Content-Type``. Either way the stored form is
bytes plus a normalised content type, which the payload GET must be asked for.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from lbaas.errors import InvalidInput

TEXT = "text/plain"
BINARY_TYPES = frozenset(
    {"application/octet-stream", "application/pkcs8", "application/pkix-cert", "application/pkcs12"}
)
SECRET_TYPES = frozenset({"symmetric", "public", "private", "passphrase", "certificate", "opaque"})


def normalise_type(content_type: str) -> str:
    """``text/plain; charset=utf-8`` → ``text/plain``; unknown types are refused."""
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    charset = params.strip().lower()
    if media == TEXT and charset in ("", "charset=utf-8"):
        return TEXT
    if media in BINARY_TYPES and not charset:
        return media
    raise InvalidInput(f"Unsupported payload content type {content_type!r}.")


def from_json_body(payload: str, content_type: str, encoding: str | None, limit: int) -> bytes:
    kind = normalise_type(content_type)
    if kind == TEXT:
        if encoding:
            raise InvalidInput("payload_content_encoding is not allowed for text/plain.")
        data = payload.encode("utf-8")
    else:
        if (encoding or "").lower() != "base64":
            raise InvalidInput(f"payload_content_encoding must be base64 for {kind} payloads.")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput("The payload is not valid base64.") from exc
    return checked(data, limit)


def from_raw_body(body: bytes, content_type: str, encoding: str | None, limit: int) -> bytes:
    kind = normalise_type(content_type)
    if (encoding or "").lower() == "base64" and kind != TEXT:
        try:
            body = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput("The payload is not valid base64.") from exc
    return checked(body, limit)


def checked(data: bytes, limit: int) -> bytes:
    if not data:
        raise InvalidInput("The payload is empty.")
    if len(data) > limit:
        raise InvalidInput(f"The payload is larger than {limit} bytes.")
    return data


def accepts(accept: str | None, stored_type: str) -> bool:
    """Whether an ``Accept`` header admits the stored content type."""
    if not accept:
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("*/*", stored_type) or (media == "application/*" and stored_type != TEXT):
            return True
    return False


def utc_naive(moment: datetime | None) -> datetime | None:
    """Expirations are stored as naive UTC, like every other timestamp here."""
    if moment is None or moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)
