"""The project file (core/store): creation, items files, validation, idempotent ingestion, supersede, retract,
iterations, reproducibility, replay and the tables front ends use."""

from __future__ import annotations

import json
import os
import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easl_toolkit.core.errors import EaslError, InputError
from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project, read_items
from easl_toolkit.core.store.schema import SCHEMA_VERSION
from easl_toolkit.core.tables import read_table, write_table
from tests.store_helpers import answer, assert_verified, dump, make_items, new_project

# ------------------------------------------------------------------------------------------------- creation


def test_create_records_items_hyper_and_covering_iteration(tmp_path):
    hyper = Hyper(method="easl", hit_size=4, gamma=0.2, epsilon=0.05, score_min=1, score_max=7, seed=3)
    with Project.create(tmp_path / "p.easl", make_items(23), hyper) as p:
        assert p.hyper == hyper
        assert p.n_items == 23
        assert p.iteration() == 0
        hits = p.open_hits()
        assert len(hits) == 6  # ceil(23 / 4)
        ids = [it["item_id"] for h in hits for it in h["items"]]
        assert set(ids) == set(make_items(23)["item_id"])  # every item covered
        assert all(len({it["item_id"] for it in h["items"]}) == 4 for h in hits)  # distinct within a HIT
        first = hits[0]["items"][0]
        assert set(first) == {"item_id", "text", "topic", "latent"}
        items = p.items()
        pd.testing.assert_frame_equal(
            items[["item_id", "text", "topic"]], make_items(23)[["item_id", "text", "topic"]], check_dtype=False
        )
        assert p.db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert p.db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert_verified(p)
    reopened = Project.open(tmp_path / "p.easl")
    assert reopened.hyper == hyper
    reopened.close()


def test_create_refuses_to_overwrite_and_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "p.easl"
    new_project(tmp_path).close()
    before = dump(target)
    with pytest.raises(EaslError, match="already exists"):
        new_project(tmp_path)
    assert dump(target) == before
    bad = make_items(10)
    bad.loc[7, "item_id"] = "i002"
    with pytest.raises(EaslError, match=r"row 8: column 'item_id': duplicate item id 'i002' \(first on row 3\)"):
        Project.create(tmp_path / "q.easl", bad, Hyper())
    with pytest.raises(EaslError, match="fewer than the HIT size"):
        Project.create(tmp_path / "q.easl", make_items(3), Hyper())
    assert sorted(os.listdir(tmp_path)) == ["p.easl"]


def test_open_rejects_non_projects_and_newer_schema(tmp_path):
    with pytest.raises(EaslError, match="no such project file"):
        Project.open(tmp_path / "missing.easl")
    junk = tmp_path / "junk.easl"
    junk.write_text("hello, I am not a database" * 100)
    with pytest.raises(EaslError, match="not an easl project"):
        Project.open(junk)
    empty = tmp_path / "empty.easl"
    sqlite3.connect(empty).close()
    with pytest.raises(EaslError, match="not an easl project"):
        Project.open(empty)
    new_project(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "p.easl")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(EaslError, match="newer than this version of easl-toolkit"):
        Project.open(tmp_path / "p.easl")


# ------------------------------------------------------------------------------------------------ items files


def write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def test_items_in_every_format(tmp_path):
    expected = pd.DataFrame(
        {"item_id": ["007", "b"], "text": ["first, with comma", 'second "quoted"'], "extra": ["x", "y"]}
    )
    csv_path = write(tmp_path, "i.csv", 'id,text,extra\n007,"first, with comma",x\nb,"second ""quoted""",y\n')
    tsv_path = write(tmp_path, "i.tsv", 'id\ttext\textra\n007\tfirst, with comma\tx\nb\tsecond "quoted"\ty\n')
    jsonl_path = write(
        tmp_path,
        "i.jsonl",
        '{"id": "007", "text": "first, with comma", "extra": "x"}\n\n'
        '{"id": "b", "text": "second \\"quoted\\"", "extra": "y"}\n',
    )
    pq_path = str(tmp_path / "i.parquet")
    expected.rename(columns={"item_id": "id"}).to_parquet(pq_path)
    for path in (csv_path, tsv_path, jsonl_path, pq_path):
        got = read_items(path)
        pd.testing.assert_frame_equal(got.astype(object), expected.astype(object), check_dtype=False)


def test_items_custom_columns_and_numeric_jsonl_ids(tmp_path):
    path = write(tmp_path, "i.jsonl", '{"key": 1, "body": "one"}\n{"key": 2, "body": "two"}\n')
    got = read_items(path, id_column="key", text_column="body")
    assert got["item_id"].tolist() == ["1", "2"]
    assert got["text"].tolist() == ["one", "two"]


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("key,text\na,x\n", r"i\.csv: line 1: column 'id' not found \(the columns are: key, text\)\.$"),
        ("id,body\na,x\n", r"i\.csv: line 1: column 'text' not found \(the columns are: id, body\)\.$"),
        ("", r"i\.csv: the file is empty"),
        ("\n\n  \n", r"i\.csv: the file is empty"),
        ("id,text\n", r"i\.csv: the file has a header but no items"),
        ("id,text\na,x\nb,y\na,z\n", r"i\.csv:4: column 'id': duplicate item id 'a' \(first on line 2\)"),
        ("id,text\na,x\n,y\n", r"i\.csv:3: column 'id': the item id is empty"),
        ("id,text\na,x,extra\n", r"i\.csv:2: the record has 3 fields but the header has 2"),
        ("id,text,id\na,x,y\n", r"i\.csv:1: column 3: the column name 'id' appears twice"),
        ('id,text\na,"multi\nline"\nb,y\na,z\n', r"i\.csv:5: column 'id': duplicate item id 'a' \(first on line 2\)"),
    ],
)
def test_items_file_errors(tmp_path, content, pattern):
    path = write(tmp_path, "i.csv", content)
    with pytest.raises(EaslError, match=pattern):
        read_items(path)


def test_items_extra_column_clashing_with_the_text(tmp_path):
    path = write(tmp_path, "i.csv", "id,body,text\na,x,y\n")
    with pytest.raises(
        EaslError,
        match=r"i\.csv: line 1: column 'text' would clash with the item text taken from "
        r"column 'body'; rename it",
    ):
        read_items(path, text_column="body")


def test_items_file_lists_every_bad_row(tmp_path):
    path = write(tmp_path, "i.csv", "id,text\na,x\n,y\na,z\nb,w\nb,v\n")
    with pytest.raises(EaslError) as err:
        read_items(path)
    msg = str(err.value)
    assert "3 bad rows" in msg
    assert "i.csv:3: column 'id': the item id is empty" in msg
    assert "i.csv:4: column 'id': duplicate item id 'a' (first on line 2)" in msg
    assert "i.csv:6: column 'id': duplicate item id 'b' (first on line 5)" in msg


def test_items_file_not_utf8_names_line_and_column(tmp_path):
    path = write(tmp_path, "i.csv", b"id,text\na,fine\nb,caf\xe9\n")
    with pytest.raises(EaslError, match=r"i\.csv:3: column 6: the file is not valid UTF-8 \(byte 0xe9\)"):
        read_items(path)


def test_items_other_format_errors(tmp_path):
    with pytest.raises(EaslError, match=r"i\.jsonl:2: column 2: not valid JSON"):
        read_items(write(tmp_path, "i.jsonl", '{"id": "a", "text": "x"}\n{oops\n'))
    with pytest.raises(EaslError, match=r"i2\.jsonl:1: expected a JSON object per line, found list"):
        read_items(write(tmp_path, "i2.jsonl", "[1, 2]\n"))
    with pytest.raises(EaslError, match=r"i\.xlsx: cannot tell the file format"):
        read_items(write(tmp_path, "i.xlsx", "x"))
    with pytest.raises(EaslError, match=r"nope\.csv: no such file"):
        read_items(tmp_path / "nope.csv")
    pq = tmp_path / "i.parquet"
    pd.DataFrame({"id": ["a", None], "text": ["x", "y"]}).to_parquet(pq)
    with pytest.raises(EaslError, match=r"i\.parquet:row 2: column 'id': the item id is empty"):
        read_items(pq)


# --------------------------------------------------------------------------------------------------- ingest


def test_ingest_is_idempotent(tmp_path):
    rng = np.random.default_rng(1)
    with new_project(tmp_path) as p:
        rows = answer(p.open_hits(), rng)
        first = p.ingest(rows, source="batch")
        assert (first.new, first.duplicate, first.superseded, first.rejected) == (len(rows), 0, 0, 0)
        before = dump(p.path)
        again = p.ingest(rows, source="batch")
        assert (again.new, again.duplicate, again.superseded) == (0, len(rows), 0)
        assert dump(p.path) == before
        assert_verified(p)


def test_ingest_repeats_inside_a_batch_count_as_duplicates(tmp_path):
    with new_project(tmp_path) as p:
        hit = p.open_hits()[0]
        item = hit["items"][0]["item_id"]
        rows = pd.DataFrame({"hit_id": [hit["hit_id"]] * 2, "item_id": [item] * 2, "score": [40, 40.0]})
        report = p.ingest(rows, source="b")
        assert (report.new, report.duplicate) == (1, 1)
        assert p.status()["n_observations"] == 1
        assert_verified(p)


def test_supersede_keeps_the_log_and_counts_the_latest(tmp_path):
    with new_project(tmp_path) as p:
        hit = p.open_hits()[0]
        item = hit["items"][0]["item_id"]
        p.ingest([{"item_id": item, "score": 20, "hit_id": hit["hit_id"], "annotator": "x"}], source="a")
        report = p.ingest([{"item_id": item, "score": 80, "hit_id": hit["hit_id"], "annotator": "x"}], source="b")
        assert (report.new, report.superseded, report.duplicate) == (0, 1, 0)
        n_log = p.db.conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
        assert n_log == 2
        ratings = p.ratings()
        assert ratings["score"].tolist() == [80.0]
        est = p.estimates().set_index("item_id")
        # EASL: Beta(1 + 0.8, 1 + 0.2): mode 0.8, variance 0.06 on the unit scale
        assert est.loc[item, "estimate"] == pytest.approx(80.0)
        assert est.loc[item, "variance"] == pytest.approx(0.06 * 100**2)
        assert est.loc[item, "n_annotations"] == 1
        assert_verified(p)


def test_annotation_id_is_the_key_when_given(tmp_path):
    with new_project(tmp_path) as p:
        hit = p.open_hits()[0]
        item = hit["items"][0]["item_id"]
        p.ingest([{"item_id": item, "score": 20, "annotation_id": 17, "annotator": "x"}], source="a")
        # same annotation, annotator field changed: still the same key; new score supersedes
        r = p.ingest([{"item_id": item, "score": 30, "annotation_id": "17", "annotator": "y"}], source="a")
        assert (r.new, r.superseded) == (0, 1)
        # another annotation of the same item: a new observation
        r = p.ingest([{"item_id": item, "score": 30, "annotation_id": 18}], source="a")
        assert r.new == 1
        assert p.status()["n_observations"] == 2
        assert_verified(p)


def test_retract_annotations_and_hits(tmp_path):
    rng = np.random.default_rng(2)
    with new_project(tmp_path) as p:
        hits = p.open_hits()
        p.ingest(answer(hits, rng, with_annotation_id=True), source="a")
        assert p.status()["n_hits_open"] == 0
        ann = f"ann-{hits[0]['hit_id']}"
        assert p.retract([ann], source="ls") == 5
        assert p.retract([ann], source="ls") == 0  # twice changes nothing
        st = p.status()
        assert st["n_observations"] == 5 * len(hits) - 5
        assert st["n_hits_open"] == 1
        assert_verified(p)
        # an EASL item back at no observations is exactly the prior
        est = p.estimates().set_index("item_id")
        counts = p.state()["count"]
        assert np.all(p.state()["alpha"][counts == 0] == 1.0)
        assert set(est.index[est["n_annotations"] == 0]) <= {it["item_id"] for it in hits[0]["items"]}
        assert p.retract_hit(hits[0]["hit_id"], source="ls") == 0
        assert p.status()["n_hits_open"] == 0
        assert p.retract_hit(hits[1]["hit_id"], source="ls") == 5
        assert p.status()["n_hits_retracted"] == 2
        assert_verified(p)
        with pytest.raises(EaslError, match="unknown HIT 'nope'"):
            p.retract_hit("nope", source="ls")
        # a retracted HIT no longer takes scores
        with pytest.raises(EaslError, match="was retracted"):
            p.ingest(
                [{"item_id": hits[1]["items"][0]["item_id"], "score": 5, "hit_id": hits[1]["hit_id"]}], source="late"
            )
        assert p.next_hits()[0]["iteration"] == 1
        assert_verified(p)


# ----------------------------------------------------------------------------------------------- validation


def bad_rows(p: Project) -> tuple[pd.DataFrame, dict[int, str]]:
    """One good row and one row per kind of error, with the expected reason of each bad row (by CSV line)."""
    h0, h1 = p.open_hits()[0], p.open_hits()[1]
    i0 = [it["item_id"] for it in h0["items"]]
    i1 = [it["item_id"] for it in h1["items"]]
    rows = [
        (h0["hit_id"], i0[0], "50", "good"),
        (h0["hit_id"], i0[1], "abc", "x"),
        (h0["hit_id"], i0[2], "nan", "x"),
        (h0["hit_id"], i0[3], "inf", "x"),
        (h0["hit_id"], i0[4], "101", "x"),
        (h0["hit_id"], i0[4], "-0.5", "y"),
        (h0["hit_id"], "no-such-item", "5", "x"),
        ("no-such-hit", i0[0], "5", "x"),
        (h0["hit_id"], i1[0], "5", "x"),
        (h0["hit_id"], i0[1], "", "z"),
        (h1["hit_id"], "", "5", "z"),
    ]
    frame = pd.DataFrame(rows, columns=["hit_id", "item_id", "score", "annotator"])
    expected = {
        3: "score: not a number ('abc')",
        4: "score: NaN is not a score",
        5: "score: the score is infinite",
        6: "score: 101 is outside the project's score range [0, 100]",
        7: "score: -0.5 is outside the project's score range [0, 100]",
        8: "item_id: unknown item 'no-such-item'",
        9: "hit_id: unknown HIT 'no-such-hit'",
        10: f"item_id: item '{i1[0]}' is not in HIT '{h0['hit_id']}'",
        11: "score: the score is missing",
        12: "item_id: the item id is missing",
    }
    return frame, expected


def test_invalid_rows_reject_the_whole_batch_listing_every_row(tmp_path):
    with new_project(tmp_path) as p:
        frame, expected = bad_rows(p)
        path = tmp_path / "ann.csv"
        frame.to_csv(path, index=False)
        before = dump(p.path)
        with pytest.raises(EaslError) as err:
            p.ingest(read_table(path), source=str(path))
        msg = str(err.value)
        assert "10 of 11 rows are invalid, so nothing was ingested" in msg
        for line, reason in expected.items():
            assert f"{path}:{line}: {reason}" in msg
        assert dump(p.path) == before


def test_skip_invalid_ingests_the_rest_and_records_rejects(tmp_path):
    with new_project(tmp_path) as p:
        frame, expected = bad_rows(p)
        path = tmp_path / "ann.jsonl"
        write_table(frame, path)
        report = p.ingest(read_table(path), source="ann.jsonl", skip_invalid=True)
        assert (report.new, report.rejected) == (1, 10)
        got = dict(zip(report.rejects["location"], report.rejects["field"] + ": " + report.rejects["reason"]))
        # JSONL has no header line: CSV line k is JSONL line k - 1
        assert got == {f"{path}:{line - 1}": reason for line, reason in expected.items()}
        assert list(report.rejects.columns[:3]) == ["location", "field", "reason"]
        assert p.status()["n_rejects"] == 10
        stored = p.db.conn.execute("SELECT location, reason, payload FROM rejects ORDER BY id").fetchall()
        assert stored[0][0] == f"{path}:2" and stored[0][1] == "score: not a number ('abc')"
        assert json.loads(stored[0][2])["score"] == "abc"
        assert_verified(p)


def test_conflicting_scores_for_one_key_in_a_batch_are_rejected(tmp_path):
    with new_project(tmp_path) as p:
        item = p.items()["item_id"][0]
        rows = pd.DataFrame({"item_id": [item, item], "score": [10, 90], "location": ["f.csv:2", "f.csv:3"]})
        with pytest.raises(
            EaslError,
            match=r"f\.csv:3: score: conflicts with f\.csv:2 \(same item, HIT and "
            r"annotator, different score\)",
        ):
            p.ingest(rows, source="f.csv")


def test_annotation_spanning_hits_is_rejected(tmp_path):
    with new_project(tmp_path) as p:
        h0, h1 = p.open_hits()[:2]
        rows = [
            {"item_id": h0["items"][0]["item_id"], "hit_id": h0["hit_id"], "score": 1, "annotation_id": "A"},
            {"item_id": h1["items"][0]["item_id"], "hit_id": h1["hit_id"], "score": 1, "annotation_id": "A"},
        ]
        with pytest.raises(EaslError, match="annotation 'A' covers several HITs"):
            p.ingest(rows, source="x")


def test_missing_columns(tmp_path):
    with (
        new_project(tmp_path) as p,
        pytest.raises(EaslError, match=r"f\.csv: column 'score' is missing \(the columns are: item_id, value\)"),
    ):
        p.ingest(pd.DataFrame({"item_id": ["i000"], "value": [3]}), source="f.csv")


@pytest.mark.parametrize("method", ["ra", "trueskill"])
def test_whole_hit_methods_need_complete_submissions(tmp_path, method):
    rng = np.random.default_rng(5)
    with new_project(tmp_path, method=method) as p:
        hits = p.open_hits()
        rows = answer(hits[:2], rng)
        partial = rows.drop(index=[1]).reset_index(drop=True)  # HIT 0 lacks its second item
        partial.loc[len(partial)] = {
            "hit_id": None,
            "item_id": hits[2]["items"][0]["item_id"],
            "score": 3,
            "annotator": "ann",
        }
        partial["location"] = [f"f.csv:{k + 2}" for k in range(len(partial))]
        before = dump(p.path)
        with pytest.raises(EaslError) as err:
            p.ingest(partial, source="f.csv")
        msg = str(err.value)
        missing = hits[0]["items"][1]["item_id"]
        for line in (2, 3, 4, 5):
            assert (
                f"f.csv:{line}: hit_id: the submission for HIT '{hits[0]['hit_id']}' lacks valid scores for "
                f"items {missing}"
            ) in msg
        assert f"f.csv:{len(partial) + 1}: hit_id: a hit_id is required: method '{method}'" in msg
        assert dump(p.path) == before
        report = p.ingest(partial, source="f.csv", skip_invalid=True)
        assert (report.new, report.rejected) == (5, 5)
        assert_verified(p)


# ------------------------------------------------------------------------------------- models through the log


@pytest.mark.parametrize("method", ["easl", "ra", "trueskill", "da"])
def test_cache_equals_replay_through_appends_supersedes_and_retractions(tmp_path, method):
    rng = np.random.default_rng(11)
    with new_project(tmp_path, n=30, method=method, seed=4) as p:
        for it in range(3):
            hits = p.next_hits()
            half = len(hits) // 2
            p.ingest(answer(hits[:half], rng, annotator="a", with_annotation_id=True), source=f"it{it}a")
            assert_verified(p)
            p.ingest(answer(hits[half:], rng, annotator="b"), source=f"it{it}b")
            assert_verified(p)
        # a second opinion on some HITs (new submissions of existing HITs by another annotator)
        hits = p.hits(0)
        p.ingest(answer(hits[:3], rng, annotator="c"), source="extra")
        assert_verified(p)
        # supersede: annotator a changes the whole submission of one HIT
        ann_hits = [h for h in p.hits(1)][:1]
        changed = answer(ann_hits, rng, annotator="a", with_annotation_id=True)
        changed["score"] = 100 - changed["score"]
        report = p.ingest(changed, source="update")
        assert report.superseded == len(changed)
        assert report.rebuilt == (method in ("ra", "trueskill"))
        assert_verified(p)
        n_retracted = p.retract([f"a-{ann_hits[0]['hit_id']}"], source="delete")
        assert n_retracted == len(changed)
        assert_verified(p)
        p.retract_hit(p.hits(2)[-1]["hit_id"], source="delete")
        assert_verified(p)
        # rebuild gives the same cache
        assert p.rebuild()["max_abs_diff"] <= 1e-9


def test_da_selects_least_annotated_items(tmp_path):
    rng = np.random.default_rng(3)
    with new_project(tmp_path, n=20, method="da", hits_per_iteration=2) as p:
        p.ingest(answer(p.open_hits(), rng), source="it0")
        hits = p.next_hits()
        assert len(hits) == 2
        # every item has one score; iteration 1 picks 10 distinct items (least annotated, random tie-break)
        items = [it["item_id"] for h in hits for it in h["items"]]
        assert len(set(items)) == 10
        counts = p.state()["count"]
        assert counts.min() >= 1
        assert_verified(p)


# ------------------------------------------------------------------------------------------------ iterations


def test_next_iteration_starts_only_when_every_hit_is_complete(tmp_path):
    rng = np.random.default_rng(4)
    with new_project(tmp_path, n=20, hit_size=5) as p:
        hits = p.next_hits()
        assert [h["iteration"] for h in hits] == [0] * 4
        p.ingest(answer(hits[:3], rng), source="a")
        again = p.next_hits()
        assert [h["hit_id"] for h in again] == [hits[3]["hit_id"]]
        # a partial submission does not complete a HIT
        part = answer(hits[3:], rng).iloc[:4]
        p.ingest(part, source="b")
        assert p.next_hits()[0]["hit_id"] == hits[3]["hit_id"]
        p.ingest(answer(hits[3:], rng).iloc[4:], source="c")
        new = p.next_hits()
        assert p.iteration() == 1
        assert len(new) == 20 // 5
        assert all(h["iteration"] == 1 for h in new)
        assert p.next_hits() == new  # asking again returns the same open HITs
        assert_verified(p)


def test_add_hits_records_a_new_iteration_of_open_hits(tmp_path):
    rng = np.random.default_rng(12)
    with new_project(tmp_path, n=20, hit_size=5) as p:
        first = p.next_hits()
        p.ingest(answer(first[:2], rng), source="a")  # first[2:] stay open
        busy = {it["item_id"] for h in first[2:] for it in h["items"]}
        index = p.item_index()
        free = np.flatnonzero(~index.isin(sorted(busy)))
        assert free.size == 10
        added = p.add_hits(np.vstack([free[:5], free[5:]]))
        assert p.iteration() == 1
        assert [h["hit_id"] for h in added] == ["it1-0", "it1-1"]
        assert [[it["item_id"] for it in h["items"]] for h in added] == [
            index[free[:5]].tolist(),
            index[free[5:]].tolist(),
        ]
        assert all(h["status"] == "open" for h in p.hits(1))
        assert p.db.conn.execute("SELECT n_hits FROM iterations WHERE iteration = 1").fetchone()[0] == 2
        # the new HITs take scores like any other, and complete
        p.ingest(answer(added, rng), source="b")
        assert [h["status"] for h in p.hits(1)] == ["complete", "complete"]
        # an empty selection adds nothing
        assert p.add_hits(np.empty((0, 5), dtype=np.int64)) == []
        assert p.iteration() == 1
        assert_verified(p)


def test_add_hits_refuses_items_in_open_hits_and_malformed_input(tmp_path):
    with new_project(tmp_path, n=20, hit_size=5) as p:
        open_item = p.item_index().get_loc(p.next_hits()[0]["items"][2]["item_id"])
        before = dump(tmp_path / "p.easl")
        with pytest.raises(ValueError, match=r"already in the open HIT 'it0-\d+'"):
            p.add_hits([[open_item]])
        with pytest.raises(ValueError, match="appears more than once"):
            p.add_hits([[1, 2], [3, 1]])
        with pytest.raises(ValueError, match="0..19"):
            p.add_hits([[0, 20]])
        with pytest.raises(ValueError, match="width 6"):
            p.add_hits([[0, 1, 2, 3, 4, 5]])
        with pytest.raises(ValueError, match="2-d integer array"):
            p.add_hits([0, 1, 2])
        with pytest.raises(ValueError, match="2-d integer array"):
            p.add_hits([[0.5, 1.0]])
        # inside a caller's transaction, a refusal rolls back only the savepoint; the caller decides
        with p.transaction():
            p.set_meta({"note": "kept"})
            with pytest.raises(ValueError):
                p.add_hits([[open_item]])
        assert p.get_meta("note") == "kept"
        assert p.iteration() == 0
    with Project.open(tmp_path / "p.easl", readonly=True) as r, pytest.raises(EaslError, match="read-only"):
        r.add_hits([[0]])
    after = [s for s in dump(tmp_path / "p.easl") if "'note'" not in s]
    assert after == before


def test_prepared_rows_ingest_like_plain_rows_and_revalidate_when_hits_change(tmp_path):
    rng = np.random.default_rng(5)
    with (
        new_project(tmp_path, name="a.easl", n=20, hit_size=5) as a,
        new_project(tmp_path, name="b.easl", n=20, hit_size=5) as b,
    ):
        hits = a.next_hits()
        rows = answer(hits[:2], rng, with_annotation_id=True)
        rows.loc[3, "score"] = 300  # one invalid row
        prepared = a.prepare(rows, source="ls")
        assert prepared.batch.rejects["reason"].tolist() == ["300 is outside the project's score range [0, 100]"]
        with pytest.raises(EaslError, match="1 of 10 rows are invalid"):
            a.ingest(prepared, source="ls")
        good = rows.drop(index=3)
        ra = a.ingest(a.prepare(good, source="ls"), source="ls")
        rb = b.ingest(good, source="ls")
        assert (
            ra.as_dict()
            == rb.as_dict()
            == {"rows": 9, "new": 9, "duplicate": 0, "superseded": 0, "rejected": 0, "rebuilt": False}
        )
        for name in a.state():
            np.testing.assert_array_equal(a.state()[name], b.state()[name])
        assert a.ratings().drop(columns="created_at").equals(b.ratings().drop(columns="created_at"))
        # a HIT retracted between prepare and ingest: validated again inside the transaction, so refused
        late = answer(hits[2:3], rng, annotator="late")
        prepared = a.prepare(late, source="ls")
        assert prepared.batch.rejects.empty
        a.retract_hit(hits[2]["hit_id"], source="ls")
        with pytest.raises(EaslError, match="was retracted"):
            a.ingest(prepared, source="ls")
        # rows prepared for another project are refused
        with pytest.raises(ValueError, match="prepared for"):
            b.ingest(a.prepare(good, source="ls"), source="ls")
        assert_verified(a)


@pytest.mark.parametrize("method", ["easl", "ra"])
def test_small_ingests_patch_the_cached_state_in_place(tmp_path, method):
    """A small ingest rewrites only the changed state values (incremental blob I/O); the cache stays equal to a
    replay through appends, supersedes and retractions, and the state rows keep their identity."""
    rng = np.random.default_rng(21)
    with new_project(tmp_path, n=400, hit_size=5, method=method) as p:
        statements: list[str] = []
        p.db.conn.set_trace_callback(statements.append)
        hits = p.next_hits()
        for k in range(6):
            before = p.state()
            rows = answer(hits[k : k + 1], rng, annotator=f"a{k}", with_annotation_id=True)
            p.ingest(rows, source="s")
            after = p.state()
            touched = p.item_index().get_indexer(rows["item_id"])
            untouched = np.setdiff1d(np.arange(400), touched)
            for name in after:
                np.testing.assert_array_equal(after[name][untouched], before[name][untouched])
            assert (after["count"][touched] == before["count"][touched] + 1).all()
            assert not [s for s in statements if s.startswith(("INSERT INTO state", "DELETE FROM state"))]
            assert_verified(p)
        # supersede and retract take the same path
        rows.loc[0, "score"] = 100 - rows.loc[0, "score"] + 0.5
        p.ingest(rows, source="s2")
        assert_verified(p)
        p.retract(["a2-" + hits[2]["hit_id"]], source="del")
        assert p.state()["count"][p.item_index().get_indexer([it["item_id"] for it in hits[2]["items"]])].sum() == 0
        assert_verified(p)
        p.db.conn.set_trace_callback(None)


def run_loop(tmp_path, name, seed, iterations=3, method="easl"):
    rng = np.random.default_rng(99)  # same simulated answers in every run
    history = []
    with new_project(tmp_path, name=name, n=40, seed=seed, method=method) as p:
        for _ in range(iterations):
            hits = p.next_hits()
            history.append([[it["item_id"] for it in h["items"]] for h in hits])
            p.ingest(answer(hits, rng), source="sim")
    return history


def test_same_seed_gives_the_same_hits(tmp_path):
    a = run_loop(tmp_path, "a.easl", seed=7)
    b = run_loop(tmp_path, "b.easl", seed=7)
    c = run_loop(tmp_path, "c.easl", seed=8)
    assert a == b
    assert a != c


def test_restart_gives_the_same_next_iteration(tmp_path):
    rng = np.random.default_rng(6)
    with new_project(tmp_path, name="a.easl", n=30, seed=2) as p:
        answers = answer(p.next_hits(), rng)
        p.ingest(answers, source="x")
    with new_project(tmp_path, name="b.easl", n=30, seed=2) as q:
        q.ingest(answers, source="x")
    with Project.open(tmp_path / "a.easl") as p, Project.open(tmp_path / "b.easl") as q:
        assert p.next_hits() == q.next_hits()


# --------------------------------------------------------------------------------------------------- outputs


def test_status_estimates_and_ratings(tmp_path):
    rng = np.random.default_rng(8)
    with new_project(tmp_path, score_min=1, score_max=5) as p:
        st = p.status()
        for key in (
            "iteration",
            "n_items",
            "n_observations",
            "n_hits_open",
            "mean_variance",
            "max_variance",
            "n_hits_total",
            "n_annotations",
            "events",
            "n_rejects",
        ):
            assert key in st.to_json()
        assert st.mean_variance == pytest.approx(1 / 12)  # the Beta(1, 1) prior, unit scale
        assert list(st.to_json(extra={"x": 1})) == [
            "path",
            "method",
            "iteration",
            "n_items",
            "n_observations",
            "n_log_records",
            "n_hits_total",
            "n_hits_open",
            "n_hits_complete",
            "n_hits_retracted",
            "mean_variance",
            "max_variance",
            "variance_scale",
            "n_annotations",
            "events",
            "n_rejects",
            "x",
            "hit_size",
            "score_range",
            "seed",
            "schema_version",
        ]
        json.dumps(st.to_json(), allow_nan=False)
        hits = p.open_hits()
        rows = answer(hits, rng, score_max=4)
        rows["score"] = rows["score"] + 1
        p.ingest(rows, source="s")
        est = p.estimates()
        assert list(est.columns[:7]) == [
            "item_id",
            "estimate",
            "mean",
            "variance",
            "ci_low",
            "ci_high",
            "n_annotations",
        ]
        assert list(est.columns[7:]) == ["text", "topic", "latent"]
        assert ((est["estimate"] >= 1) & (est["estimate"] <= 5)).all()
        assert ((est["ci_low"] <= est["mean"]) & (est["mean"] <= est["ci_high"])).all()
        summary = p.model.summary(p.state())
        np.testing.assert_allclose(est["variance"], summary.variance * 16)
        np.testing.assert_allclose(est["estimate"], 1 + 4 * summary.estimate)
        ratings = p.ratings()
        assert list(ratings.columns) == [
            "item_id",
            "annotator",
            "score",
            "hit_id",
            "iteration",
            "annotation_id",
            "created_at",
        ]
        assert len(ratings) == p.status().n_observations
        assert (ratings["iteration"] == 0).all()


def test_estimates_rename_clashing_item_columns(tmp_path):
    items = make_items(10, extra=False).assign(variance="high")
    with Project.create(tmp_path / "p.easl", items, Hyper()) as p:
        assert "item_variance" in p.estimates().columns


# ---------------------------------------------------------------------------------------- front-end tables


def test_transaction_groups_calls_and_rolls_back_whole(tmp_path):
    rng = np.random.default_rng(9)
    with new_project(tmp_path) as p:
        before = dump(p.path)
        rows = answer(p.open_hits()[:1], rng)
        with pytest.raises(RuntimeError), p.transaction():
            p.add_event("k", {})
            p.ingest(rows, source="inner")
            raise RuntimeError("front end failed after ingesting")
        assert dump(p.path) == before
        # an inner failure rolls back the inner part only
        with p.transaction():
            p.set_meta({"ls.project": "12"})
            with pytest.raises(EaslError):
                p.ingest([{"item_id": "nope", "score": 1}], source="inner")
        assert p.get_meta("ls.project") == "12"
        assert_verified(p)


def test_events_rejects_meta_and_external_ids(tmp_path):
    with new_project(tmp_path) as p:
        e1 = p.add_event("ANNOTATION_CREATED", {"annotation": {"id": 3}})
        e2 = p.add_event("TASKS_DELETED", "{}")
        assert [e.id for e in p.events("pending")] == [e1, e2]
        assert json.loads(p.events("pending")[0].payload) == {"annotation": {"id": 3}}
        e3, e4 = p.add_events([("A", "{}"), ("B", {"b": 1})])
        p.finish_event(e1)
        p.finish_event(e2, failed=True, note="boom")
        p.finish_event(e3, note="ignored: another project")  # a note alone does not fail the event
        assert [e.id for e in p.events("pending")] == [e4]
        assert [(e.id, e.note) for e in p.events("failed")] == [(e2, "boom")]
        assert [(e.id, e.note) for e in p.events("done")] == [(e1, None), (e3, "ignored: another project")]
        p.finish_event(e4)
        assert p.status().events == p.event_counts() == {"pending": 0, "done": 3, "failed": 1}
        assert p.add_reject(source="labelstudio", location="task 4", reason="score: 150 is outside", payload={"a": 1})
        # the same reject again (e.g. on the next reconciliation) is recorded once
        assert not p.add_reject(source="labelstudio", location="task 4", reason="score: 150 is outside", payload={})
        assert p.status().n_rejects == 1
        p.set_meta({"ls.last_reconciliation": "2026-01-01T00:00:00+00:00", "ls.gone": "x"})
        p.set_meta({"ls.gone": None})
        assert p.get_meta("ls.last_reconciliation") == "2026-01-01T00:00:00+00:00" and p.get_meta("ls.gone") is None
        assert "last_reconciliation" not in p.status().to_json()  # the plugin's figure, not the store's
        for key in ("hyper", "state_seq", "state_figures", "format"):
            with pytest.raises(ValueError, match="managed by the project"):
                p.set_meta({key: "{}"})
        hit, other = (h["hit_id"] for h in p.open_hits()[:2])
        p.map_external("task", [(20, hit), (21, hit)])
        p.map_external("task", [("20", hit)])  # idempotent
        assert p.local_id("task", 20) == hit and p.local_id("task", 22) is None
        assert p.external_ids("task", hit) == ["20", "21"]
        assert p.external_map("task") == {"20": hit, "21": hit}
        with pytest.raises(InputError, match="already mapped"):  # an id is never remapped; nothing is written
            p.map_external("task", [(22, other), (20, other)])
        with pytest.raises(InputError, match="given for both"):
            p.map_external("task", [(23, hit), (23, other)])
        assert p.local_id("task", 22) is None
        p.unmap_external("task", [20, 99])
        assert p.external_map("task") == {"21": hit}
        p.map_external("task", [(20, other)])  # after an explicit unmap the id is free again
        assert p.local_id("task", 20) == other
        assert_verified(p)


def test_readonly_open_refuses_writes(tmp_path):
    new_project(tmp_path).close()
    with Project.open(tmp_path / "p.easl", readonly=True) as p:
        assert p.status()["n_items"] == 23
        with pytest.raises(EaslError, match="read-only"):
            p.ingest([{"item_id": "i000", "score": 1}], source="x")


def test_json_booleans_and_numeric_ids(tmp_path):
    with new_project(tmp_path) as p:
        hit = p.open_hits()[0]
        item = hit["items"][0]["item_id"]
        path = tmp_path / "a.jsonl"
        path.write_text(
            f'{{"item_id": "{item}", "score": true, "annotation_id": 5}}\n'
            f'{{"item_id": "{item}", "score": 12.5, "annotation_id": 6}}\n'
        )
        with pytest.raises(EaslError, match=r"a\.jsonl:1: score: not a number \(True\)"):
            p.ingest(read_table(path), source="a.jsonl")
        report = p.ingest(read_table(path), source="a.jsonl", skip_invalid=True)
        assert (report.new, report.rejected) == (1, 1)
        assert p.ratings()["annotation_id"].tolist() == ["6"]  # JSON numbers become id text without ".0"
        assert_verified(p)


def test_readers_see_the_last_commit_while_a_writer_works(tmp_path):
    rng = np.random.default_rng(12)
    with new_project(tmp_path) as writer, Project.open(tmp_path / "p.easl", readonly=True) as reader:
        rows = answer(writer.open_hits(), rng)
        with writer.transaction():
            writer.ingest(rows, source="w")
            assert writer.status()["n_observations"] == len(rows)
            assert reader.status()["n_observations"] == 0  # uncommitted work is invisible (WAL snapshot)
            assert reader.verify()["ok"]
        assert reader.status()["n_observations"] == len(rows)
        assert reader.verify()["ok"]


# ------------------------------------------------------------------------ random operation sequences (property)

OPS = st.lists(
    st.tuples(
        st.sampled_from(["score", "score", "rescore", "retract", "retract_hit", "next"]),
        st.integers(0, 10_000),
        st.integers(0, 100),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("method", ["easl", "ra", "trueskill", "da"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_sequence_of_operations_keeps_cache_and_log_consistent(tmp_path_factory, method, ops):
    """Random interleavings of new submissions, re-scored submissions, retractions, withdrawn HITs and new
    iterations: the live observations always equal a plain model of "the last score of each key", and the cache
    always equals the replay."""
    d = tmp_path_factory.mktemp("ops")
    expected: dict[tuple[str, str], float] = {}  # (annotation_id, item_id) -> live score
    submitted: list[tuple[str, dict]] = []
    with new_project(d, n=12, method=method, hit_size=3, seed=1) as p:
        for k, (op, pick, score) in enumerate(ops):
            if op == "next":
                p.next_hits()
                continue
            if op in ("score", "rescore"):
                if op == "rescore" and submitted:
                    ann, hit = submitted[pick % len(submitted)]
                else:
                    hits = p.open_hits() or p.next_hits()
                    hit = hits[pick % len(hits)]
                    ann = f"ann{k}"
                    submitted.append((ann, hit))
                rows = [
                    {
                        "item_id": it["item_id"],
                        "hit_id": hit["hit_id"],
                        "annotation_id": ann,
                        "score": float((score + 17 * j) % 101),
                    }
                    for j, it in enumerate(hit["items"])
                ]
                try:
                    p.ingest(rows, source="ops")
                except EaslError as exc:
                    assert "was retracted" in str(exc)
                    continue
                for r in rows:
                    expected[(ann, r["item_id"])] = r["score"]
            elif op == "retract" and submitted:
                ann, _ = submitted[pick % len(submitted)]
                n = p.retract([ann], source="ops")
                gone = [key for key in expected if key[0] == ann]
                assert n == len(gone)
                for key in gone:
                    del expected[key]
            elif op == "retract_hit" and submitted:
                _, hit = submitted[pick % len(submitted)]
                p.retract_hit(hit["hit_id"], source="ops")
                anns = {a for a, h in submitted if h["hit_id"] == hit["hit_id"]}
                for key in [key for key in expected if key[0] in anns]:
                    del expected[key]
            result = p.verify()
            assert result["ok"], (op, result)
        ratings = p.ratings()
        got = {(a, i): s for a, i, s in zip(ratings["annotation_id"], ratings["item_id"], ratings["score"])}
        assert got == expected
        assert p.state()["count"].sum() == len(expected)


# ------------------------------------------------------------------------------------ derived state, import weight


def test_status_figures_are_stored_with_the_state_and_recomputed_when_stale(tmp_path):
    rng = np.random.default_rng(11)
    with new_project(tmp_path) as p:
        p.ingest(answer(p.open_hits(), rng), source="s")
        stored = p.status()
        variance = p.model.selection_keys(p.state())[1]
        assert stored.mean_variance == pytest.approx(float(np.mean(variance)), abs=1e-15)
        assert stored.max_variance == pytest.approx(float(np.max(variance)), abs=1e-15)
        assert stored.n_annotations["max"] == int(p.state()["count"].max())
        # a file written by an older version has no figures (or figures of another log position): recomputed
        with p.transaction():
            p.db.conn.execute("DELETE FROM meta WHERE key = 'state_figures'")
        assert p.status() == stored
        with p.transaction():
            p.db.conn.execute("INSERT INTO meta(key, value) VALUES ('state_figures', '{\"seq\": -1}')")
        assert p.status() == stored
        assert_verified(p)


def test_iteration_states_replay_each_iteration_and_top_up_shares_choose_hits(tmp_path):
    rng = np.random.default_rng(12)
    with new_project(tmp_path) as p:
        p.ingest(answer(p.open_hits(), rng), source="s")
        p.next_hits()
        p.ingest(answer(p.open_hits(), rng), source="s")
        states = [(t, {k: v.copy() for k, v in s.items()}) for t, s in p.iteration_states(2)]
        assert [t for t, _ in states] == [0, 1]
        for name, arr in p.state().items():  # nothing outside the two iterations: the end of 1 is the live state
            np.testing.assert_allclose(states[1][1][name], arr, atol=1e-12)
        assert states[0][1]["count"].sum() == len(p.hits(0)) * p.hyper.hit_size
        # streaming: top up to 3 open HITs, none sharing an item with another open HIT
        assert p.top_up_hits(3) == 3
        mask, n_open = p.open_item_mask()
        assert n_open == 3 and mask.sum() == 3 * p.hyper.hit_size
        assert [h["hit_id"] for h in p.open_hits(every_iteration=True)] == [f"it2-{j}" for j in range(3)]
        assert_verified(p)


def test_importing_the_store_loads_neither_pandas_scipy_nor_models():
    import subprocess
    import sys

    heavy = ("pandas", "scipy", "easl_toolkit.core.models")
    code = f"import sys, easl_toolkit.core.store; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
