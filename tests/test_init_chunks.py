"""``easl init`` streams the items file (``Project.create_from_chunks`` over ``core.tables.iter_table``
"Flat memory"): chunked creation gives the project a whole-file creation gives, a bad row in any chunk is located
and nothing is created, and a duplicate id is found across chunks with both of its lines."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easl_toolkit.core.errors import InputError, InvalidRows
from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project, read_items
from easl_toolkit.core.store.items import MissingColumn, chunk_rows
from easl_toolkit.core.tables import CHUNK_ROWS, iter_table
from easl_toolkit.tui.cli import main

HYPER = Hyper(hit_size=3, seed=4)


def _write_csv(path: Path, rows: list[list[str]], header: tuple[str, ...] = ("id", "text", "topic")) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _contents(path: Path) -> dict[str, list[Any]]:
    """The rows of the project file that do not carry a time stamp (items, HITs' items, state, item columns)."""
    conn = sqlite3.connect(path)
    try:
        return {
            "items": conn.execute("SELECT idx, item_id, text, data FROM items ORDER BY idx").fetchall(),
            "hits": conn.execute("SELECT hit_no, hit_id, iteration, status FROM hits ORDER BY hit_no").fetchall(),
            "hit_items": conn.execute("SELECT * FROM hit_items ORDER BY hit_no, position").fetchall(),
            "state": conn.execute("SELECT name, dtype, shape, data FROM state ORDER BY name").fetchall(),
            "meta": conn.execute("SELECT key, value FROM meta WHERE key IN ('item_columns', 'hyper')").fetchall(),
            "journal": conn.execute("PRAGMA journal_mode").fetchall(),
        }
    finally:
        conn.close()


def _leftovers(directory: Path, keep: set[str]) -> list[str]:
    return sorted(set(os.listdir(directory)) - keep)


def _export_and_verify(project: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["verify", str(project)]) == 0
    assert main(["export", str(project), "--output", str(out)]) == 0
    capsys.readouterr()
    return out.read_text()


def test_chunked_init_equals_whole_file_init(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # quoted cells with line breaks make the chunks' lines non-consecutive (the csv-module path of iter_table)
    rows = [[f"i{k:02d}", f"text {k}" + ("\nsecond line" if k % 5 == 0 else ""), "abc"[k % 3]] for k in range(23)]
    items = _write_csv(tmp_path / "items.csv", rows)
    whole = tmp_path / "whole.easl"
    Project.create(whole, read_items(items), HYPER).close()
    cli = ["init", str(tmp_path / "cli.easl"), "--items", str(items), "--hit-size", "3", "--seed", "4"]
    assert main([*cli, "--method", HYPER.method]) == 0
    expected = _contents(whole)
    assert expected["journal"] == [("wal",)]
    assert json.loads(dict(expected["meta"])["item_columns"]) == ["topic"]
    exported = _export_and_verify(whole, tmp_path / "whole.csv", capsys)
    assert _contents(tmp_path / "cli.easl") == expected
    for size in (1, 2, 7, 22, 23, 1000):
        project = tmp_path / f"chunks{size}.easl"
        Project.create_from_chunks(project, iter_table(items, size), HYPER).close()
        assert _contents(project) == expected, size
        assert _export_and_verify(project, tmp_path / f"chunks{size}.csv", capsys) == exported


def test_a_bad_row_in_the_second_chunk_is_located_and_nothing_is_created(tmp_path: Path) -> None:
    rows = [[f"i{k}", f"text {k}", "x"] for k in range(8)]
    rows[4][0] = "  "  # line 6, in the second chunk of 3 rows
    rows[7][0] = ""  # line 9, in the third
    items = _write_csv(tmp_path / "items.csv", rows)
    project = tmp_path / "p.easl"
    with pytest.raises(InvalidRows) as err:
        Project.create_from_chunks(project, iter_table(items, 3), HYPER)
    assert err.value.messages == [
        f"{items}:6: column 'id': the item id is empty",
        f"{items}:9: column 'id': the item id is empty",
    ]
    assert str(err.value).startswith(f"{items}: the items cannot be used; 2 bad rows:\n  {items}:6: column 'id'")
    assert _leftovers(tmp_path, set()) == ["items.csv"]  # no project, no temporary file


def test_a_reader_error_in_a_later_chunk_leaves_nothing(tmp_path: Path) -> None:
    items = tmp_path / "items.csv"
    items.write_text("id,text\na,x\nb,y\nc,z\nd,w,extra\n")
    with pytest.raises(InputError, match=r"items\.csv:5: the record has 3 fields but the header has 2"):
        Project.create_from_chunks(tmp_path / "p.easl", iter_table(items, 2), HYPER)
    assert _leftovers(tmp_path, set()) == ["items.csv"]


def test_duplicates_across_chunks_are_found_with_both_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [[f"i{k}", f"text {k}", "x"] for k in range(10)]
    rows[6][0] = "i1"  # line 8 repeats line 3 (another chunk)
    rows[9][0] = "i8"  # line 11 repeats line 10 (the same chunk of 3: lines 9-11)
    rows[2][1] = "a text\nover two lines"  # lines after line 4 are one further down
    items = _write_csv(tmp_path / "items.csv", rows)
    with pytest.raises(InvalidRows) as err:
        Project.create_from_chunks(tmp_path / "p.easl", iter_table(items, 3), HYPER)
    assert err.value.messages == [
        f"{items}:9: column 'id': duplicate item id 'i1' (first on line 3)",
        f"{items}:12: column 'id': duplicate item id 'i8' (first on line 11)",
    ]
    with pytest.raises(InvalidRows) as whole:
        read_items(items)
    assert whole.value.messages == err.value.messages
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items)]) == 1
    assert f"{items}:9: column 'id': duplicate item id 'i1' (first on line 3)" in capsys.readouterr().err
    assert _leftovers(tmp_path, set()) == ["items.csv"]


def test_jsonl_chunks_may_differ_in_their_keys(tmp_path: Path) -> None:
    records = [{"id": "a", "text": "x"}, {"id": "b"}, {"id": "c", "text": "z", "topic": "t"}, {"id": 7, "text": "w"}]
    records += [{"id": "e", "text": "v", "n": 1.5}, {"id": "f", "text": "u"}]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in records))
    whole = tmp_path / "whole.easl"
    Project.create(whole, read_items(items), HYPER).close()
    with Project.open(whole) as p:
        expected = p.items()
    assert list(expected.columns) == ["item_id", "text", "topic", "n"]
    for size in (1, 2, 3, 6):  # size 1: the first chunk has no optional column, the second no text
        project = tmp_path / f"c{size}.easl"
        Project.create_from_chunks(project, iter_table(items, size), HYPER).close()
        with Project.open(project) as p:
            pd.testing.assert_frame_equal(p.items(), expected)
            assert p.verify()["ok"]


def test_a_column_no_record_has_is_one_error(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "body": "x"}\n{"id": "b", "body": "y"}\n')
    with pytest.raises(MissingColumn, match=r"column 'text' not found \(the columns are: id, body\)"):
        Project.create_from_chunks(tmp_path / "p.easl", iter_table(items, 1), HYPER)
    csv_items = _write_csv(tmp_path / "items.csv", [["a", "x"]], header=("key", "text"))
    with pytest.raises(MissingColumn, match=r"items\.csv: line 1: column 'id' not found"):
        Project.create_from_chunks(tmp_path / "p.easl", iter_table(csv_items, 1), HYPER)
    assert _leftovers(tmp_path, set()) == ["items.csv", "items.jsonl"]


def test_parquet_in_batches_equals_the_whole_file(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": [f"p{k}" for k in range(11)], "text": ["t"] * 11, "score": range(11)})
    items = tmp_path / "items.parquet"
    frame.to_parquet(items, index=False)
    Project.create(tmp_path / "whole.easl", read_items(items), HYPER).close()
    Project.create_from_chunks(tmp_path / "c.easl", iter_table(items, 4), HYPER).close()
    assert _contents(tmp_path / "c.easl") == _contents(tmp_path / "whole.easl")


def test_long_texts_make_smaller_chunks(tmp_path: Path) -> None:
    short = _write_csv(tmp_path / "short.csv", [[f"i{k}", "x", "y"] for k in range(100)])
    long = _write_csv(tmp_path / "long.csv", [[f"i{k}", "x" * 100_000, "y"] for k in range(30)])
    assert chunk_rows(short) == CHUNK_ROWS
    assert 100 <= chunk_rows(long) < 200


ids = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", " ", ""])
texts = st.text(alphabet=st.sampled_from('xy ,"\n'), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(ids, texts), min_size=1, max_size=12), size=st.integers(1, 13))
def test_any_chunk_size_gives_the_whole_file_result(rows: list[tuple[str, str]], size: int) -> None:
    """Whatever the chunk size: the same project, or the same error with the same located messages."""
    with tempfile.TemporaryDirectory() as tmp:
        items = _write_csv(Path(tmp) / "items.csv", [[i, t] for i, t in rows], header=("id", "text"))
        hyper = Hyper(hit_size=2, seed=1)
        try:
            Project.create(Path(tmp) / "whole.easl", read_items(items), hyper).close()
            expected: object = _contents(Path(tmp) / "whole.easl")
        except InputError as exc:
            expected = (type(exc), str(exc), getattr(exc, "messages", None))
        except Exception as exc:  # e.g. fewer items than the HIT size
            expected = (type(exc), str(exc).replace("whole.easl", "P"))
        try:
            Project.create_from_chunks(Path(tmp) / "chunks.easl", iter_table(items, size), hyper).close()
            got: object = _contents(Path(tmp) / "chunks.easl")
        except InputError as exc:
            got = (type(exc), str(exc), getattr(exc, "messages", None))
        except Exception as exc:
            got = (type(exc), str(exc).replace("chunks.easl", "P"))
        assert got == expected
        if not isinstance(expected, dict):
            assert not (Path(tmp) / "chunks.easl").exists()
            assert sorted(os.listdir(tmp)) == ["items.csv"]


def test_past_the_kept_messages_the_rest_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import easl_toolkit.core.store.items as items_module

    monkeypatch.setattr(items_module, "MAX_KEPT", 3)  # memory stays bounded however many rows are bad
    items = _write_csv(tmp_path / "items.csv", [["a" if k % 2 else "", f"t{k}", "x"] for k in range(8)])
    with pytest.raises(InvalidRows) as err:
        Project.create_from_chunks(tmp_path / "p.easl", iter_table(items, 3), HYPER)
    assert err.value.messages == [
        f"{items}:2: column 'id': the item id is empty",
        f"{items}:4: column 'id': the item id is empty",
        f"{items}:5: column 'id': duplicate item id 'a' (first on line 3)",
    ]
    assert f"{items}: the items cannot be used; 7 bad rows:" in str(err.value)  # 4 empty ids, 3 repeats of 'a'
