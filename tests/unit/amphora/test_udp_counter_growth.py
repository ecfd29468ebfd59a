"""The UDP listener counters of an amphora, summed read after read across table changes.

The flow count comes from the engine's table (kept across a member change, which only
updates slots), the byte counts from the filter table (reloaded by every PUT): one going
back to zero says nothing about the other.
"""

from __future__ import annotations

from lbaas.amphora.datapath import _Growth


def test_bytes_restarting_with_the_filter_do_not_count_the_flows_again() -> None:
    growth = _Growth()
    growth.observe({53: (10, 1000, 2000)})
    growth.observe({53: (15, 300, 600)})  # a PUT reloaded the filter: bytes from zero
    assert growth.total[53] == (5, 300, 600)


def test_a_replaced_engine_table_counts_its_flows_from_zero() -> None:
    growth = _Growth()
    growth.observe({53: (10, 1000, 2000)})
    growth.observe({53: (4, 1500, 2600)})  # the engine's table was replaced
    assert growth.total[53] == (4, 500, 600)
