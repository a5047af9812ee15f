"""varint_column.decode_column: the same values as decoding each varint, on every width and sign."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tableformat.codec.entry_codec import _long_bytes
from tableformat.codec.varint_column import decode_column, varint_value

_WIDTH_RANGES = [(0, 63), (64, 8191), (8192, 2**20 - 1), (2**20, 2**27 - 1), (2**27, 2**34 - 1), (2**34, 2**41 - 1),
                 (2**41, 2**48 - 1), (2**48, 2**55 - 1), (2**55, 2**62 - 1), (2**62, 2**63 - 1)]  # fmt: skip
"""Non-negative values whose zigzag varints are 1, 2, ... 10 bytes wide."""


def _decoded_one_by_one(raw: list[bytes]) -> list[int]:
    return [varint_value(r) for r in raw]


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from(_WIDTH_RANGES), st.integers(1, 300))
@pytest.mark.slow
def test_a_column_of_one_width_decodes_exactly(data: st.DataObject, bounds: tuple[int, int], count: int) -> None:
    values = data.draw(st.lists(st.integers(*bounds), min_size=count, max_size=count))
    raw = [_long_bytes(v) for v in values]
    assert len({len(r) for r in raw}) == 1
    assert decode_column(raw) == values


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=80))
def test_any_column_decodes_exactly(values: list[int]) -> None:
    """Mixed widths and negative values: decoded one by one, the same values."""
    raw = [_long_bytes(v) for v in values]
    assert decode_column(raw) == values == _decoded_one_by_one(raw)


def test_one_negative_value_in_a_column_of_one_width() -> None:
    for width_values in ([5] * 40, [700] * 40, [3_000_000] * 40, [2**50] * 40):
        for where in (0, 17, 39):
            values = list(width_values)
            values[where] = -values[where]
            raw = [_long_bytes(v) for v in values]
            assert len({len(r) for r in raw}) == 1
            assert decode_column(raw) == values


def test_columns_of_every_size_around_the_bulk_threshold() -> None:
    for count in range(20):
        values = [i * 1_000 + 20_000 for i in range(count)]
        assert decode_column([_long_bytes(v) for v in values]) == values
