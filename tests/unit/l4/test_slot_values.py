"""``SlotValues`` gives back the values it was given, for few and for many members."""

from __future__ import annotations

from lbaas.l4.slot_values import SlotValues


def test_the_values_come_back_in_slot_order() -> None:
    values = ["10.0.0.2 . 80", "10.0.0.1 . 80", "10.0.0.2 . 80", "10.0.0.3 . 81"]
    held = SlotValues(values)
    assert list(held) == values and len(held) == 4


def test_more_than_255_members_still_fit() -> None:
    values = [f"10.1.{n // 250}.{n % 250} . 80" for n in range(700)] * 3
    assert list(SlotValues(values)) == values


def test_an_empty_table_is_empty() -> None:
    assert list(SlotValues([])) == [] and len(SlotValues([])) == 0
