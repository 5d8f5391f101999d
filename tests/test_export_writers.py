"""The export's writers against what they stand for, with any library versions: the threaded CSV writer
(:func:`core.store.arrow_columns.write_csv`, which holds the export target of ``bench/bench_scale.py``) writes the
bytes of Arrow's CSV writer, whole or in slices (property test); the Beta intervals evaluated once per distinct
(alpha, beta) pair equal SciPy's of every row. That the exported files hold the project's tables value for value is
``tests/test_export_roundtrip.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from easl_toolkit.core.models.beta import beta_interval
from easl_toolkit.core.store import arrow_columns
from easl_toolkit.tui.cli import main
from tests.store_helpers import export_project


@pytest.mark.parametrize("slice_rows", [1, 7, 1000])
@pytest.mark.parametrize("n", [150, 5000])
def test_csv_formatted_in_slices_by_threads_is_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, slice_rows: int
) -> None:
    """``core.store.arrow_columns.write_csv`` formats a large table in slices, in threads: with slices of a few
    rows (the first shorter than the header, a last one partial) the file is the one written in one slice."""
    project = tmp_path / "p.easl"
    export_project(project, "easl", n, rounded=False)
    whole, sliced = tmp_path / "whole.csv", tmp_path / "sliced.csv"
    with monkeypatch.context() as patch:
        patch.setattr(arrow_columns, "CSV_SLICE_ROWS", 10**9)
        assert main(["export", str(project), "--output", str(whole)]) == 0
    monkeypatch.setattr(arrow_columns, "CSV_SLICE_ROWS", slice_rows)
    assert main(["export", str(project), "--output", str(sliced)]) == 0
    assert sliced.read_bytes() == whole.read_bytes()
    assert whole.read_bytes().count(b"\n") > n


STRINGS = ["", "a", 'say "hi"', '""', "a,b", "line\nbreak", "cr\r", "naïve 東京", " spaced ", "back\\slash"]
NUMBERS: dict[str, list[float | None]] = {
    "int": [0, 1, -1, 7, 2**62, -(2**63)],
    "float": [
        0.0,
        -0.0,
        1.5,
        1 / 3,
        1e-300,
        1e300,
        123456789.125,
        float("inf"),
        float("-inf"),
        float("nan"),
        -float("nan"),
        None,
    ],
}


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    """Small tables of string, integer and float columns whose values repeat or not, with nulls, NaN, infinities
    and signed zeros."""
    n = draw(st.integers(1, 40))
    arrays, names = [], []
    for k in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["string", "int", "float"]))
        if kind == "string":
            texts: list[str | None] = STRINGS + ([None] if draw(st.booleans()) else [])
            values: list[str | float | None] = draw(st.lists(st.sampled_from(texts), min_size=n, max_size=n))
            arrays.append(pa.array(values, type=draw(st.sampled_from([pa.string(), pa.large_string()]))))
        else:
            pool = draw(st.lists(st.sampled_from(NUMBERS[kind]), min_size=1, max_size=4))
            if draw(st.booleans()):  # every value distinct: Arrow's writer
                pool += [k + 0.5 * j for j in range(n)] if kind == "float" else [float(10 + j) for j in range(n)]
            values = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
            if kind == "int":
                values = [None if v is None else int(v) for v in values]
            arrays.append(pa.array(values, type=pa.int64() if kind == "int" else pa.float64()))
        names.append(draw(st.sampled_from(["x", 'q"uote', "a,b", "é"])) + str(k))
    return pa.Table.from_arrays(arrays, names=names)


@settings(max_examples=300)
@given(table=tables(), slice_rows=st.integers(1, 9))
def test_write_csv_is_the_bytes_of_arrows_writer(
    tmp_path_factory: pytest.TempPathFactory, table: pa.Table, slice_rows: int
) -> None:
    """Whichever way :func:`core.store.arrow_columns.write_csv` formats a table (Arrow's writer at once or in
    slices), the file holds the bytes of Arrow's writer."""
    expected = pa.BufferOutputStream()
    pa_csv.write_csv(table, expected, write_options=pa_csv.WriteOptions(quoting_style="needed"))
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrow_columns, "CSV_SLICE_ROWS", slice_rows)
        arrow_columns.write_csv(table, path)
    assert path.read_bytes() == expected.getvalue().to_pybytes()


def test_beta_interval_of_repeated_pairs_is_the_interval_of_each() -> None:
    """The Beta interval evaluated once per distinct (alpha, beta) equals SciPy's of every row."""
    from scipy import special

    rng = np.random.default_rng(9)
    alpha = 1 + rng.integers(0, 5, size=5000) * 0.25
    beta = 1 + rng.integers(0, 5, size=5000) * 0.25
    low, high = beta_interval(alpha, beta)
    tail = (1.0 - 0.95) / 2.0
    assert np.array_equal(low, special.betaincinv(alpha, beta, tail))
    assert np.array_equal(high, special.betaincinv(alpha, beta, 1.0 - tail))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.text()),
            st.floats(allow_nan=True, allow_infinity=True),
            st.one_of(st.none(), st.integers(-(2**62), 2**62)),
            st.booleans(),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_jsonl_rows_read_back_as_json_dumps_of_the_same_values(rows: list[tuple[Any, ...]]) -> None:
    """``core.tables.jsonl_bytes`` (the JSONL files of ``easl export`` and every table written as JSONL): each line
    is the row as ``json.loads`` reads ``json.dumps`` of it, floats exactly (the shortest form that reads back as
    the same float64), NaN and infinities as null, any text (quotes, backslashes, control characters, non-ASCII)
    as itself; integral floats stay floats."""
    import json
    import math

    import pandas as pd

    from easl_toolkit.core.tables import jsonl_bytes

    frame = pd.DataFrame(rows, columns=["text", "x", "n", "flag"])
    frame["n"] = pd.array([row[2] for row in rows], dtype="Int64")  # (not through the float column the frame made)
    lines = jsonl_bytes(frame).decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == len(rows) + 1
    for line, (text, x, n, flag) in zip(lines, rows):
        got = json.loads(line)
        assert list(got) == ["text", "x", "n", "flag"]
        assert got["text"] == text and got["n"] == n and got["flag"] is flag
        if math.isfinite(x):
            assert type(got["x"]) is float and got["x"] == x and math.copysign(1, got["x"]) == math.copysign(1, x)
        else:
            assert got["x"] is None
