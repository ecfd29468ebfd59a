"""Field groups several request schemas share, each declared once.

How a resource's schemas are built from one declaration of each field: every resource
has an ``…Options`` class holding the fields that create and update accept alike (all
optional, ``None`` by default), so a new optional field is written there and nowhere
else. The create schema adds to it what only a create has (required fields, fields with a
create default, references that cannot change later); the update schema adds the
same mutable fields again only where create gives them a default or requires them, now
optional. Immutable fields are simply absent from the update schema, so sending one is
the usual "Unknown attribute" 400. ``tests/unit/api/test_schema_shapes.py`` holds the
rule: an update schema has its create schema's fields minus a named list of fixed ones,
all optional, typed and constrained alike where the create has no default.

The typed route (plain class inheritance) is chosen over building update classes at
run time with ``create_model``: routers read ``body.listener.protocol_port`` and the like,
and ``mypy --strict`` sees these attributes with their real types only when they are
declared in a class body.
"""

from __future__ import annotations

from lbaas.api.schemas.types import (
    AdminState,
    Description,
    Name,
    ProjectRef,
    Schema,
    ShortText,
    Tags,
    Uuid,
)


class Tagged(Schema):
    """Tags, on every resource that carries a status."""

    tags: Tags | None = None


class Named(Schema):
    """An optional display name (members and monitors have no description)."""

    name: Name | None = None


class Described(Named, Tagged):
    """The name, description and tags a status-carrying resource may have."""

    description: Description | None = None


class EnabledOnCreate(Schema):
    """``admin_state_up`` as a create takes it: true unless sent false or null."""

    admin_state_up: AdminState = True


class EnabledChange(Schema):
    """``admin_state_up`` as an update takes it: only changed when sent."""

    admin_state_up: AdminState | None = None


class GivenId(Schema):
    """An lbaas extension: the id a new object is to have, given by a trusted service.

    Octavia's lbaas provider driver (``octavia-provider/``) sends the ids Octavia chose, so
    one object has one id on both sides: on a standalone create and on every object nested
    in a single-call load balancer create. Administrators only (403 for anyone else); an id
    already taken is the usual 409. Absent, lbaas picks a fresh UUID as Octavia does.
    """

    id: Uuid | None = None


class ProjectOnCreate(GivenId):
    """The project a create may name, by its current name or its deprecated one (and the
    id a trusted service gives, see ``GivenId``).

    A load balancer takes it; its children accept and ignore it, because they belong to
    their load balancer's project.
    """

    project_id: ProjectRef | None = None
    tenant_id: ProjectRef | None = None


class TlsProtocols(Schema):
    """The TLS versions and ALPN protocols a listener offers or a pool uses to members."""

    tls_versions: list[ShortText] | None = None
    alpn_protocols: list[ShortText] | None = None
