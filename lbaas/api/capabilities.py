"""Checking a request against its provider's declared capabilities, before any write.

Octavia answers 501 when a driver lacks an option; lbaas answers 400 in Octavia's error
shape with the same wording, because the request is what is wrong for that provider and
clients treat 4xx as "fix your input" (the issue brief asks for 400).
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum

from lbaas.api.services import ApiServices
from lbaas.errors import InvalidInput


def require_capability(
    services: ApiServices, provider: str, what: str, value: StrEnum | str, supported_attr: str
) -> None:
    caps = services.providers.capabilities(provider)
    supported: Collection[object] = getattr(caps, supported_attr)
    if value not in supported:
        raise InvalidInput(
            f"Provider '{provider}' does not support a requested option: {what} {value}"
        )
