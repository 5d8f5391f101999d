"""Chunked reading of annotation files (``core.tables.iter_table``): the Arrow path for plain lines and the csv
module for the rest give the same records and source lines as reading the whole file, whatever the chunk size."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easl_toolkit.core.errors import InputError
from easl_toolkit.core.tables import iter_table, read_table


def _chunked(path: Path, rows: int) -> tuple[pd.DataFrame, list[int]]:
    tables = list(iter_table(path, chunk_rows=rows))
    frame = pd.concat([t.frame for t in tables], ignore_index=True)
    return frame, [int(n) for t in tables for n in t.lines]


def _whole(path: Path) -> tuple[pd.DataFrame, list[int]]:
    table = read_table(path)
    return table.frame.reset_index(drop=True), [int(n) for n in table.lines]


CELLS = st.sampled_from(["a", "b7", "007", "x y", "", ' "q" ', "two\nlines", "é", "1.5", "tab"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(CELLS, CELLS), min_size=0, max_size=12),
    blanks=st.sets(st.integers(0, 12), max_size=3),
    chunk=st.integers(1, 5),
)
def test_chunks_equal_the_whole_file(tmp_path: Path, rows: list[tuple[str, str]], blanks: set[int], chunk: int) -> None:
    lines = ["item_id,score\n"]
    for k, (a, b) in enumerate(rows):
        if k in blanks:
            lines.append("\n")
        lines.append(",".join(f'"{c.replace(chr(34), chr(34) * 2)}"' if set(c) & set('",\n ') else c for c in (a, b)))
        lines.append("\n")
    path = tmp_path / "a.csv"
    path.write_text("".join(lines), encoding="utf-8")
    whole, whole_lines = _whole(path)
    frame, frame_lines = _chunked(path, chunk)
    assert frame_lines == whole_lines
    pd.testing.assert_frame_equal(frame, whole, check_dtype=False)


def test_a_quoted_field_after_plain_chunks_keeps_its_line(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    plain = "".join(f"i{k},{k}\n" for k in range(7))
    path.write_text("\ufeffitem_id,score\n" + plain + 'i7,"7"\n"i\n8",8\ni9,9\n', encoding="utf-8")
    frame, lines = _chunked(path, 3)
    assert lines == list(range(2, 11)) + [12]
    assert frame["item_id"].tolist()[-3:] == ["i7", "i\n8", "i9"]
    assert list(frame.columns) == ["item_id", "score"]


def test_errors_in_a_later_chunk_name_their_line(tmp_path: Path) -> None:
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("item_id,score\n" + "".join(f"i{k},{k}\n" for k in range(6)) + "i6,6,extra\n")
    with pytest.raises(InputError, match=r"ragged\.csv:8: the record has 3 fields but the header has 2"):
        _chunked(ragged, 2)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"item_id,score\n" + b"".join(b"i%d,%d\n" % (k, k) for k in range(6)) + b"i\xff,1\n")
    with pytest.raises(InputError, match=r"bad\.csv:8: column 2: the file is not valid UTF-8"):
        _chunked(bad, 2)


def test_a_header_without_records_is_one_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "a.tsv"
    path.write_text("item_id\tscore\n")
    tables = list(iter_table(path, chunk_rows=4))
    assert len(tables) == 1 and len(tables[0].frame) == 0
    assert list(tables[0].frame.columns) == ["item_id", "score"]
