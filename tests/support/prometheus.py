"""Reading a ``/metrics`` answer the way Prometheus does: with ``prometheus_client``'s own
parser, so a malformed exposition fails the test that scrapes it."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families


class Exposition:
    """Every sample of one scrape, found by name and a subset of its labels."""

    def __init__(self, text: str) -> None:
        self.samples: list[tuple[str, dict[str, str], float]] = []
        self.families: dict[str, str] = {}
        for family in text_string_to_metric_families(text):
            self.families[family.name] = family.type
            for sample in family.samples:
                self.samples.append((sample.name, dict(sample.labels), float(sample.value)))

    def matching(self, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
        return [
            (have, value)
            for sample, have, value in self.samples
            if sample == name and _within(labels, have)
        ]

    def value(self, name: str, **labels: str) -> float:
        """The one sample of ``name`` with these labels (AssertionError if not exactly one)."""
        found = self.matching(name, **labels)
        assert len(found) == 1, f"{name}{labels}: {len(found)} samples: {found[:5]}"
        return found[0][1]

    def total(self, name: str, **labels: str) -> float:
        """The sum over every sample of ``name`` with these labels (0 when there is none)."""
        return sum(value for _, value in self.matching(name, **labels))


def _within(wanted: Mapping[str, str], have: Mapping[str, str]) -> bool:
    return all(have.get(key) == value for key, value in wanted.items())
