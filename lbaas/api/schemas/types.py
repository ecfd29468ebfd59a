"""Field types shared by the request schemas, with Octavia's validation wording."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

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


# What the validators above accept, told to the OpenAPI document (the validators decide;
# these only describe): a UUID in any form ``uuid.UUID`` reads (hyphens optional, braces,
# ``urn:uuid:``), and an IPv4 or IPv6 address without an IPv6 zone.
UUID_PATTERN = r"^(urn:)?(uuid:)?\{?-*([0-9a-fA-F]-*){32}\}?$"
_UUID_DOC = {"pattern": UUID_PATTERN}
_IP_DOC = {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}], "pattern": "^[^%]*$"}
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4_PATTERN = rf"{_OCTET}(?:\.{_OCTET}){{3}}"

Uuid = Annotated[str, AfterValidator(_uuid), Field(json_schema_extra=_UUID_DOC)]
IpAddress = Annotated[str, AfterValidator(_ip), Field(json_schema_extra=_IP_DOC)]
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
# A provider's name: the OpenAPI document lists the enabled ones (``lbaas.api.openapi_rules``
# replaces this marker); the service answers 400 for any other. A load balancer's
# ``provider`` may also be "", which means the default one (``EMPTY_IS_DEFAULT``).
PROVIDER_MARK = "x-lbaas-provider-name"
EMPTY_IS_DEFAULT = "empty-is-default"
ProviderName = Annotated[str, Field(max_length=255, json_schema_extra={PROVIDER_MARK: True})]
ShortText = Annotated[str, Field(max_length=32)]


def given_one_of(*names: str) -> dict[str, Any]:
    """For a model's OpenAPI schema: at least one of ``names`` is sent, and not as null
    (a rule the service checks across fields, so no single field can carry it)."""
    return {
        "anyOf": [
            {"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in names
        ]
    }
