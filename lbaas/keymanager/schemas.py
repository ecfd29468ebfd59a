"""Request bodies of the key manager (unknown attributes are refused)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Name = Annotated[str, Field(max_length=255)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SecretCreate(_Body):
    name: Name | None = None
    secret_type: Literal[
        "symmetric", "public", "private", "passphrase", "certificate", "opaque"
    ] = "opaque"
    algorithm: Name | None = None
    bit_length: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    mode: Name | None = None
    expiration: datetime | None = None
    payload: str | None = None
    payload_content_type: Name | None = None
    payload_content_encoding: Name | None = None


class SecretRefItem(_Body):
    name: Name
    secret_ref: Annotated[str, Field(max_length=1024)]


class ContainerCreate(_Body):
    name: Name | None = None
    type: Literal["generic", "certificate", "rsa"]
    secret_refs: list[SecretRefItem] = []


class ContainerConsumer(_Body):
    name: Name
    URL: Name  # noqa: N815 - Barbican's attribute name


class SecretConsumer(_Body):
    service: Name
    resource_type: Name
    resource_id: Annotated[str, Field(max_length=36)]
