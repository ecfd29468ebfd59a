"""Field types shared by the request schemas, with Octavia's validation wording."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from lbaas.render.haproxy.inputs import plain_address


class Schema(BaseModel):
    """Base of request schemas: unknown attributes are refused, as Octavia does."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def given(self, name: str) -> bool:
        """Whether the client sent this field (PUT changes only what was sent)."""
        return name in self.model_fields_set


def _uuid(value: str) -> str:
    try:
        parsed = uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        raise PydanticCustomError("uuid_format", "Value should be UUID format") from None
    return str(parsed) if len(value) != 36 else value.lower()


def _ip(value: str) -> str:
    # The data plane's rule: no IPv6 zone (``fe80::1%lo backup`` parses in Python).
    address = plain_address(value)
    if address is None:
        raise PydanticCustomError("ip_format", "Value should be IPv4 or IPv6 format")
    return address


def _null_is_false(value: object) -> object:
    return False if value is None else value


Uuid = Annotated[str, AfterValidator(_uuid)]
IpAddress = Annotated[str, AfterValidator(_ip)]
Name = Annotated[str, Field(max_length=255)]
Description = Annotated[str, Field(max_length=255)]
Tag = Annotated[str, Field(max_length=255)]
Tags = list[Tag]
Port = Annotated[int, Field(ge=1, le=65535)]
ProjectRef = Annotated[str, Field(max_length=36)]
# A bool where JSON null counts as false, as Octavia treats admin_state_up, invert,
# backup, tls_enabled and the HSTS flags.
NullFalse = Annotated[bool, BeforeValidator(_null_is_false)]
AdminState = NullFalse
ContainerRef = Annotated[str, Field(max_length=255)]
ShortText = Annotated[str, Field(max_length=32)]
