"""``easl next``'s HIT files hold the HITs the paper's algorithm chooses, the same ones in every format.

The reference is computed here, from the scores the test gives and the rules ``docs/design.md`` states: iteration 0
is ``core.selection.first_iteration_hits`` with ``default_rng([seed, 0])``; iteration t >= 1 is Algorithm 1
(``core.selection.select_hits``, itself checked against the literal algorithm in ``tests/test_selection.py``) on the
EASL posterior after the scores so far, ``alpha = 1 + sum s``, ``beta = 1 + sum (1 - s)`` with ``s`` the score on
[0, 1] (Sakaguchi & Van Durme 2018, eq 24-25), its mode (eq 12) and variance (eq 13), with ``default_rng([seed, t])``.
Each iteration is written as JSONL on stdout, JSONL in a file, and CSV and Parquet in long form, read back with the
standard library (Parquet with pyarrow), and compared with the reference, item ids and texts included (quotes,
commas, line breaks, non-ASCII).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from easl_toolkit.core.selection import HitRequest, first_iteration_hits, select_hits
from easl_toolkit.tui.cli import main
from tests.hit_helpers import N_ITEMS, tricky_items

SEED, HIT_SIZE = 3, 5


def beta_keys(alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mode (eq 12; 0.5 for the untouched prior) and variance (eq 13) of Beta(alpha, beta)."""
    total = alpha + beta
    mode = np.where(total > 2, (alpha - 1) / np.maximum(total - 2, 1e-300), 0.5)
    return mode, alpha * beta / (total**2 * (total + 1))


def long_rows(hits: list[list[int]], iteration: int, items: pd.DataFrame, hit_ids: list[str]) -> list[tuple]:
    """The long form of ``hits`` (item positions): ``(hit_id, iteration, position, item_id, text)`` per item."""
    return [
        (hit_id, iteration, pos, items.item_id[i], items.text[i])
        for hit_id, row in zip(hit_ids, hits, strict=True)
        for pos, i in enumerate(row)
    ]


def from_jsonl(text: str) -> list[tuple]:
    rows = []
    for line in text.splitlines():
        hit = json.loads(line)
        for pos, item in enumerate(hit["items"]):
            rows.append((hit["hit_id"], hit["iteration"], pos, item["item_id"], item["text"]))
    return rows


def from_parquet(path: Path) -> list[tuple]:
    table = pq.read_table(path, columns=["hit_id", "iteration", "position", "item_id", "text"])
    return [tuple(row.values()) for row in table.to_pylist()]


def from_csv(path: Path) -> list[tuple]:
    with open(path, newline="", encoding="utf-8") as f:
        return [
            (r["hit_id"], int(r["iteration"]), int(r["position"]), r["item_id"], r["text"]) for r in csv.DictReader(f)
        ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    items = tricky_items()
    items_file = tmp_path / "items.jsonl"
    items.rename(columns={"item_id": "id"}).to_json(items_file, orient="records", lines=True, force_ascii=False)
    path = tmp_path / "p.easl"
    args = ["init", str(path), "--items", str(items_file), "--method", "easl"]
    assert main([*args, "--hit-size", str(HIT_SIZE), "--seed", str(SEED)]) == 0
    return path


def test_hits_of_iterations_0_to_2_are_algorithm_1_on_the_scores_given_in_every_format(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tricky_items()
    alpha, beta = np.ones(N_ITEMS), np.ones(N_ITEMS)
    rng = np.random.default_rng(7)
    for t in range(3):
        if t == 0:
            expected = first_iteration_hits(N_ITEMS, HIT_SIZE, np.random.default_rng([SEED, 0]))
        else:
            mode, variance = beta_keys(alpha, beta)
            request = HitRequest(hit_size=HIT_SIZE, n_hits=N_ITEMS // HIT_SIZE, gamma=0.1, pool="paper")
            expected = select_hits(mode, variance, request, np.random.default_rng([SEED, t]))
        capsys.readouterr()
        assert main(["next", str(project)]) == 0
        stdout = capsys.readouterr().out
        assert main(["next", str(project), "--output", str(tmp_path / f"h{t}.jsonl")]) == 0
        assert main(["next", str(project), "--output", str(tmp_path / f"h{t}.csv")]) == 0
        assert main(["next", str(project), "--output", str(tmp_path / f"h{t}.parquet")]) == 0
        hit_ids = [json.loads(line)["hit_id"] for line in stdout.splitlines()]
        assert len(set(hit_ids)) == len(expected) == len(hit_ids)
        reference = long_rows(expected.tolist(), t, items, hit_ids)
        assert from_jsonl(stdout) == reference
        assert from_jsonl((tmp_path / f"h{t}.jsonl").read_text(encoding="utf-8")) == reference
        assert from_csv(tmp_path / f"h{t}.csv") == reference
        assert from_parquet(tmp_path / f"h{t}.parquet") == reference

        score = rng.integers(0, 101, size=expected.shape).astype(float)
        answers = pd.DataFrame(
            {
                "hit_id": np.repeat(hit_ids, expected.shape[1]),
                "item_id": items.item_id.to_numpy()[expected.ravel()],
                "score": score.ravel(),
                "annotator": "a",
            }
        )
        answers.to_json(tmp_path / f"s{t}.jsonl", orient="records", lines=True, force_ascii=False)
        assert main(["ingest", str(project), str(tmp_path / f"s{t}.jsonl")]) == 0
        s01 = np.bincount(expected.ravel(), weights=score.ravel() / 100, minlength=N_ITEMS)
        n = np.bincount(expected.ravel(), minlength=N_ITEMS)
        alpha, beta = alpha + s01, beta + (n - s01)  # eq 25, summed as the model sums it


def test_the_same_seed_and_scores_give_the_same_bytes(tmp_path: Path) -> None:
    """Two projects of the same items, seed and scores write byte-identical HIT files in each format."""
    files = []
    for k in range(2):
        items_file = tmp_path / "items.csv"
        tricky_items().rename(columns={"item_id": "id"}).to_csv(items_file, index=False)
        path = tmp_path / f"p{k}.easl"
        assert main(["init", str(path), "--items", str(items_file), "--seed", "5", "--method", "easl"]) == 0
        first = tmp_path / f"first{k}.jsonl"
        assert main(["next", str(path), "--output", str(first)]) == 0
        hits = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
        answers = io.StringIO()
        writer = csv.writer(answers)
        writer.writerow(["hit_id", "item_id", "score", "annotator"])
        for h, hit in enumerate(hits):
            for p, item in enumerate(hit["items"]):
                writer.writerow([hit["hit_id"], item["item_id"], (7 * h + 3 * p) % 101, "a"])
        (tmp_path / f"s{k}.csv").write_text(answers.getvalue(), encoding="utf-8")
        assert main(["ingest", str(path), str(tmp_path / f"s{k}.csv")]) == 0
        for ext in ("jsonl", "csv", "parquet"):
            out = tmp_path / f"second{k}.{ext}"
            assert main(["next", str(path), "--output", str(out)]) == 0
            files.append(out.read_bytes())
    assert files[:3] == files[3:]
    assert all(files)


def test_open_hits_of_several_iterations_read_the_same_in_long_form_and_as_records(tmp_path: Path) -> None:
    """Streaming top-ups leave open HITs in several iterations: their long form (``easl next --output hits.csv``)
    lists the same HITs, items and texts as their records, and no item is in two open HITs."""
    from easl_toolkit.core.models import Hyper
    from easl_toolkit.core.store import Project
    from tests.hit_helpers import scores

    items = tricky_items()
    position = {item_id: k for k, item_id in enumerate(items.item_id)}
    rng = np.random.default_rng(11)
    with Project.create(tmp_path / "s.easl", items, Hyper(method="easl", hit_size=HIT_SIZE, seed=5)) as p:
        p.ingest(scores(p.next_hits(), rng), source="s0")
        assert p.top_up_hits(4) == 4
        first = p.open_hits(every_iteration=True)
        p.ingest(scores(first[:2], rng), source="s1")
        assert p.top_up_hits(6) == 4
        records = p.open_hits(every_iteration=True)
        p.open_hits_long(every_iteration=True).write_csv(tmp_path / "open.csv")
    assert len(records) == 6 and len({h["iteration"] for h in records}) >= 2
    expected = [
        (h["hit_id"], h["iteration"], pos, item["item_id"], item["text"])
        for h in records
        for pos, item in enumerate(h["items"])
    ]
    assert sorted(from_csv(tmp_path / "open.csv")) == sorted(expected)
    open_items = [position[row[3]] for row in expected]
    assert len(open_items) == len(set(open_items))
    assert all(h["hit_id"] not in {g["hit_id"] for g in first[:2]} for h in records)
