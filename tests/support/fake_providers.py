"""The fake providers of the test suite, handed to the control plane instead of patched in.

``NoopDeclaring`` is the noop provider declaring less than it could; ``provider_declaring``
lets the API (only) see it for the length of a ``with`` block, so a test can show that the
API checks requests against the provider's declared capabilities. ``noop_registry`` is the
registry with the plain noop provider, for tests that build ``ApiServices`` themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lbaas.compose import ControlPlane
from lbaas.providers.base import ProviderCapabilities, ProviderContext
from lbaas.providers.noop import NoopProvider
from lbaas.providers.registry import ProviderRegistry


class NoopDeclaring(NoopProvider):
    """The noop provider with some capabilities replaced (``listener_protocols=...``)."""

    def __init__(self, context: ProviderContext, **declared: Any) -> None:
        super().__init__(context)
        self.name = "noop"
        self._declared = declared

    def capabilities(self) -> ProviderCapabilities:
        return dataclasses.replace(super().capabilities(), **self._declared)


@contextmanager
def provider_declaring(plane: ControlPlane, **declared: Any) -> Iterator[NoopDeclaring]:
    """While active, the API checks requests against the reduced capabilities.

    The worker keeps the real noop provider: only what the API accepts changes.
    """
    fake = NoopDeclaring(ProviderContext(plane.settings), **declared)
    real = plane.services.providers
    plane.services.providers = ProviderRegistry({"noop": fake}, "noop")
    try:
        yield fake
    finally:
        plane.services.providers = real


def declared_by(capabilities: ProviderCapabilities) -> dict[str, Any]:
    """Every capability of ``capabilities``, for ``provider_declaring(plane, **...)``."""
    return {f.name: getattr(capabilities, f.name) for f in dataclasses.fields(capabilities)}


def noop_registry(settings: Any) -> ProviderRegistry:
    """A registry holding only the noop provider, its default."""
    return ProviderRegistry({"noop": NoopProvider(ProviderContext(settings))}, "noop")
