"""Loading providers from entry points and checking them before anything starts.

Providers are entry points in the ``lbaas.providers`` group. Only the enabled ones are
loaded, once, at start-up; each must subclass ``ProviderDriver`` and declare a name, a
description and its capabilities. An enabled provider that cannot be loaded stops the
process with a message naming it and the fix — a silently missing provider would only
show up later as load balancers stuck in ERROR.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points

from lbaas.errors import ConfigError
from lbaas.providers.base import ProviderCapabilities, ProviderContext, ProviderDriver

LOG = logging.getLogger(__name__)
GROUP = "lbaas.providers"
#: Octavia lists "octavia" as a deprecated alias of the amphora provider.
ALIASES = {"octavia": "amphora"}


class ProviderRegistry:
    """The enabled providers, by name, with their capabilities."""

    def __init__(self, providers: Mapping[str, ProviderDriver], default: str) -> None:
        self._providers = dict(providers)
        if self.resolve(default) is None:
            raise ConfigError(
                f"default provider '{default}' is not enabled; add it to providers.enabled"
            )
        self.default = default
        self._capabilities = {name: p.capabilities() for name, p in self._providers.items()}

    def resolve(self, name: str) -> str | None:
        """The canonical name of an enabled provider (aliases resolved), or None."""
        canonical = ALIASES.get(name, name)
        return canonical if canonical in self._providers else None

    def get(self, name: str) -> ProviderDriver:
        canonical = self.resolve(name)
        if canonical is None:
            raise ConfigError(f"provider '{name}' is not enabled")
        return self._providers[canonical]

    def capabilities(self, name: str) -> ProviderCapabilities:
        return self._capabilities[self.get(name).name]

    def listed(self) -> list[tuple[str, str]]:
        """(name, description) of every enabled provider and alias, for the API."""
        out = [(name, p.description) for name, p in self._providers.items()]
        for alias, target in ALIASES.items():
            if target in self._providers:
                out.append((alias, f"Deprecated alias of the {target} provider"))
        return out

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()


def _validate(name: str, cls: object) -> type[ProviderDriver]:
    if not isinstance(cls, type) or not issubclass(cls, ProviderDriver):
        raise ConfigError(
            f"provider '{name}': entry point does not name a ProviderDriver subclass; "
            "fix the lbaas.providers entry point or remove it from providers.enabled"
        )
    if not cls.description:
        raise ConfigError(f"provider '{name}': {cls.__name__} declares no description")
    return cls


def load_providers(enabled: Iterable[str], context: ProviderContext) -> dict[str, ProviderDriver]:
    """Instantiate every enabled provider; raise ConfigError naming any that fails."""
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    loaded: dict[str, ProviderDriver] = {}
    for name in enabled:
        canonical = ALIASES.get(name, name)
        if canonical in loaded:
            continue
        ep = found.get(canonical)
        if ep is None:
            raise ConfigError(
                f"provider '{name}' is enabled but no '{GROUP}' entry point has that name "
                f"(known: {', '.join(sorted(found)) or 'none'}); install it or remove it "
                "from providers.enabled"
            )
        try:
            cls = _validate(canonical, ep.load())
            provider = cls(context)
            caps = provider.capabilities()
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure to load must stop start-up
            raise ConfigError(
                f"provider '{name}' failed to load: {type(exc).__name__}: {exc}; "
                "fix its installation or remove it from providers.enabled"
            ) from exc
        if not isinstance(caps, ProviderCapabilities) or not caps.listener_protocols:
            raise ConfigError(f"provider '{name}' declares no listener protocols")
        provider.name = canonical
        loaded[canonical] = provider
        LOG.info("provider %s loaded (%s)", canonical, cls.__name__)
    return loaded


def build_registry(
    enabled: Iterable[str], default: str, context: ProviderContext
) -> ProviderRegistry:
    return ProviderRegistry(load_providers(enabled, context), default)
