"""The vectorised cells of validation (core.store.cells) agree with Python's own string rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from easl_toolkit.core.store.cells import WHITESPACE, codes, combine, first_of, id_strings, strip_strings


def test_the_whitespace_is_what_str_strip_removes() -> None:
    assert "".join(c for c in map(chr, range(0x110000)) if c.isspace()) == WHITESPACE


@given(st.lists(st.text(alphabet=st.sampled_from(list(WHITESPACE) + list("ab\u00e9\u4e2d,")), max_size=6)))
def test_strip_strings_is_str_strip(cells: list[str]) -> None:
    text = np.asarray(cells, dtype=object)
    assert strip_strings(text).tolist() == [c.strip() for c in cells]


@given(st.lists(st.one_of(st.none(), st.text(max_size=4), st.integers(-5, 5), st.floats(-1e12, 1e12)), max_size=8))
def test_id_strings_strips_and_blanks_are_missing(cells: list[object]) -> None:
    got = id_strings(pd.Series(cells, dtype=object)).tolist()
    for cell, value in zip(cells, got):
        if cell is None or (isinstance(cell, str) and not cell.strip()):
            assert value is None
        elif isinstance(cell, str):
            assert value == cell.strip()
        elif isinstance(cell, float) and cell == round(cell):
            assert value == str(int(cell))
        else:
            assert value == str(cell).strip()


@given(st.lists(st.sampled_from(["a", "b", "c", "\x1f", ""]), max_size=30))
def test_codes_and_first_occurrences(keys: list[str]) -> None:
    c = codes(np.asarray(keys, dtype=object))
    first = first_of(c)
    assert [keys.index(k) for k in keys] == first.tolist()
    assert all((c[i] == c[j]) == (keys[i] == keys[j]) for i in range(len(keys)) for j in range(len(keys)))


@given(st.lists(st.sampled_from(["a", "b", None]), max_size=30))
def test_codes_of_missing_values(values: list[str | None]) -> None:
    c = codes(np.asarray(values, dtype=object))
    assert all((c[i] == 0) == (v is None) for i, v in enumerate(values))
    assert all((c[i] == c[j]) == (values[i] == values[j]) for i in range(len(values)) for j in range(len(values)))


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**6), st.integers(0, 2)), max_size=40))
def test_combine_codes_equal_tuples_alike(rows: list[tuple[int, int, int]]) -> None:
    parts = [np.asarray([r[k] for r in rows], dtype=np.int64) for k in range(3)]
    c = combine(*parts)
    assert len(c) == len(rows)
    assert all((c[i] == c[j]) == (rows[i] == rows[j]) for i in range(len(rows)) for j in range(len(rows)))


def test_id_strings_of_integral_floats_beyond_int64() -> None:
    """A float id at or above 2**63 keeps its value (it once wrapped to a negative int64)."""
    got = id_strings(pd.Series([1e19, 12.0, -1e19, 2.0**63, 3.5, None], dtype=object)).tolist()
    assert got == ["10000000000000000000", "12", "-10000000000000000000", "9223372036854775808", "3.5", None]
