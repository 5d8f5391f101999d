"""The core CLI end to end: init, next, ingest, status, export, verify, demo (through ``tui.cli.main`` and, for
exit codes and streams, a real subprocess of the ``easl`` console script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main
from tests.store_helpers import answer, dump, make_items

EASL = [sys.executable, "-m", "easl_toolkit.tui.cli"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def easl(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI in a real subprocess."""
    return subprocess.run(EASL + list(args), capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.fixture
def items_csv(tmp_path):
    path = tmp_path / "items.csv"
    make_items(23).rename(columns={"item_id": "id"}).to_csv(path, index=False)
    return path


def verify_ok(project) -> None:
    assert main(["verify", str(project)]) == 0


def test_full_loop_through_the_cli(tmp_path, items_csv, capsys):
    project = tmp_path / "work.easl"
    assert main(["init", str(project), "--items", str(items_csv), "--seed", "5"]) == 0
    assert "23 items" in capsys.readouterr().out
    verify_ok(project)
    # next: stdout JSONL
    capsys.readouterr()
    assert main(["next", str(project)]) == 0
    captured = capsys.readouterr()
    hits = [json.loads(line) for line in captured.out.splitlines()]
    assert len(hits) == 5 and captured.err.startswith("iteration 0: 5 open HITs")
    assert set(hits[0]) == {"hit_id", "iteration", "items"}
    assert set(hits[0]["items"][0]) == {"item_id", "text", "topic", "latent"}
    # next: JSONL and CSV files agree
    assert main(["next", str(project), "--output", str(tmp_path / "h.jsonl")]) == 0
    assert main(["next", str(project), "--output", str(tmp_path / "h.csv")]) == 0
    from_file = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert [h["hit_id"] for h in from_file] == [h["hit_id"] for h in hits]
    long = pd.read_csv(tmp_path / "h.csv", dtype=str)
    assert list(long.columns[:5]) == ["hit_id", "iteration", "position", "item_id", "text"]
    assert long["item_id"].tolist() == [it["item_id"] for h in hits for it in h["items"]]
    # ingest twice: the second time changes nothing
    ann = answer(hits, np.random.default_rng(0))
    ann.to_csv(tmp_path / "ann.csv", index=False)
    capsys.readouterr()
    assert main(["ingest", str(project), str(tmp_path / "ann.csv")]) == 0
    assert "25 rows: 25 new, 0 duplicate, 0 superseded, 0 rejected" in capsys.readouterr().out
    verify_ok(project)
    before = dump(project)
    assert main(["ingest", str(project), str(tmp_path / "ann.csv")]) == 0
    assert "0 new, 25 duplicate" in capsys.readouterr().out
    assert dump(project) == before
    verify_ok(project)
    # status --json
    capsys.readouterr()
    assert main(["status", str(project), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["iteration"] == 0 and status["n_items"] == 23 and status["n_observations"] == 25
    assert status["n_hits_open"] == 0
    assert 0 < status["mean_variance"] <= status["max_variance"] <= 1 / 12
    assert main(["status", str(project)]) == 0
    assert "mean variance (unit scale)" in capsys.readouterr().out
    # next starts iteration 1
    assert main(["next", str(project)]) == 0
    it1 = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {h["iteration"] for h in it1} == {1}
    ann1 = answer(it1, np.random.default_rng(1), annotator="b")
    ann1.to_json(tmp_path / "ann1.jsonl", orient="records", lines=True)
    assert main(["ingest", str(project), str(tmp_path / "ann1.jsonl")]) == 0
    verify_ok(project)
    # a changed score supersedes
    ann1.loc[0, "score"] = 100 - ann1.loc[0, "score"] + 0.5
    ann1.to_parquet(tmp_path / "ann1.parquet")
    capsys.readouterr()
    assert main(["ingest", str(project), str(tmp_path / "ann1.parquet")]) == 0
    assert "20 rows: 0 new, 19 duplicate, 1 superseded" in capsys.readouterr().out  # k = 23 // 5 HITs
    verify_ok(project)


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_export_formats(tmp_path, items_csv, ext):
    project = tmp_path / "p.easl"
    init = ["init", str(project), "--items", str(items_csv), "--score-range", "1", "5", "--method", "easl"]
    assert main(init) == 0
    with Project.open(project) as p:
        rows = answer(p.open_hits(), np.random.default_rng(2), score_max=4)
        rows["score"] += 1
        rows["annotation_id"] = [f"a{k}" for k in range(len(rows))]
        p.ingest(rows, source="t")
        expected = p.estimates()
        expected_ratings = p.ratings()
    out, rat = tmp_path / f"est.{ext}", tmp_path / f"rat.{ext}"
    assert main(["export", str(project), "--output", str(out), "--ratings", str(rat)]) == 0
    if ext == "csv":
        got, got_r = pd.read_csv(out, dtype={"item_id": str}), pd.read_csv(rat)
    elif ext == "jsonl":
        got, got_r = pd.read_json(out, lines=True, dtype={"item_id": str}), pd.read_json(rat, lines=True)
    else:
        got, got_r = pd.read_parquet(out), pd.read_parquet(rat)
    assert list(got.columns) == [
        "item_id",
        "estimate",
        "mean",
        "variance",
        "ci_low",
        "ci_high",
        "n_annotations",
        "text",
        "topic",
        "latent",
    ]
    # JSONL keeps 15 significant digits (pandas' maximum); CSV and Parquet round-trip exactly
    np.testing.assert_allclose(got["estimate"], expected["estimate"], rtol=1e-14)
    np.testing.assert_allclose(got["variance"], expected["variance"], rtol=1e-14)
    assert got["item_id"].astype(str).tolist() == expected["item_id"].tolist()
    assert got["estimate"].between(1, 5).all()
    assert list(got_r.columns) == [
        "item_id",
        "annotator",
        "score",
        "hit_id",
        "iteration",
        "annotation_id",
        "created_at",
    ]
    assert len(got_r) == len(expected_ratings) == 25
    np.testing.assert_allclose(got_r["score"], expected_ratings["score"])
    verify_ok(project)


def test_bad_items_file_exits_1_and_creates_nothing(tmp_path):
    items = tmp_path / "items.csv"
    items.write_text("id,text\na,x\nb,y\na,z\n")
    project = tmp_path / "p.easl"
    result = easl("init", str(project), "--items", str(items))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: {items}: the items cannot be used; 1 bad rows:\n"
        f"  {items}:4: column 'id': duplicate item id 'a' (first on line 2)"
    )
    assert sorted(os.listdir(tmp_path)) == ["items.csv"]
    items.write_text("key,text\na,x\n")
    result = easl("init", str(project), "--items", str(items))
    assert result.returncode == 1 and "column 'id' not found" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["items.csv"]


def test_init_refuses_to_overwrite(tmp_path, items_csv, capsys):
    project = tmp_path / "p.easl"
    assert main(["init", str(project), "--items", str(items_csv)]) == 0
    before = dump(project)
    assert main(["init", str(project), "--items", str(items_csv)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert dump(project) == before


def test_bad_hyper_parameters_are_user_errors(tmp_path, items_csv, capsys):
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items_csv), "--score-range", "5", "1"]) == 1
    assert "score_max" in capsys.readouterr().err
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items_csv), "--hit-size", "1"]) == 1
    assert not (tmp_path / "p.easl").exists()
    capsys.readouterr()
    # core names the setting or column at fault; the CLI adds the flag to change
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items_csv), "--hit-size", "40"]) == 1
    assert (
        "hit_size = 40: 23 items are fewer than the HIT size 40; give more items or a smaller --hit-size"
        in capsys.readouterr().err
    )
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items_csv), "--id-column", "key"]) == 1
    assert "column 'key' not found (the columns are: " in (err := capsys.readouterr().err)
    assert "; name the right one with --id-column." in err
    assert not (tmp_path / "p.easl").exists()


def test_ingest_errors_and_skip_invalid(tmp_path, items_csv, capsys):
    project = tmp_path / "p.easl"
    assert main(["init", str(project), "--items", str(items_csv)]) == 0
    with Project.open(project) as p:
        hits = p.open_hits()
    ann = answer(hits, np.random.default_rng(3))
    ann["score"] = ann["score"].astype(object)
    ann.loc[2, "score"] = "high"
    ann.loc[5, "score"] = 250
    ann.loc[7, "item_id"] = "ghost"
    path = tmp_path / "ann.csv"
    ann.to_csv(path, index=False)
    before = dump(project)
    result = easl("ingest", str(project), str(path))
    assert result.returncode == 1
    assert "3 of 25 rows are invalid, so nothing was ingested (use --skip-invalid" in result.stderr
    assert f"{path}:4: score: not a number ('high')" in result.stderr
    assert f"{path}:7: score: 250 is outside the project's score range [0, 100]" in result.stderr
    assert f"{path}:9: item_id: unknown item 'ghost'" in result.stderr
    assert dump(project) == before
    # --skip-invalid with the default rejects file
    capsys.readouterr()
    assert main(["ingest", str(project), str(path), "--skip-invalid"]) == 0
    out = capsys.readouterr().out
    default = f"{project}.rejects.csv"
    assert f"22 new, 0 duplicate, 0 superseded, 3 rejected (written with reasons to {default})" in out
    rejects = pd.read_csv(default, dtype=str)
    assert rejects["location"].tolist() == [f"{path}:4", f"{path}:7", f"{path}:9"]
    assert rejects["reason"].tolist()[0] == "not a number ('high')"
    assert rejects["score"].tolist()[0] == "high"
    # a rejects file that cannot be written is refused before anything is ingested
    before = dump(project)
    assert main(["ingest", str(project), str(path), "--skip-invalid", "--rejects", str(tmp_path / "r.txt")]) == 1
    assert (
        main(["ingest", str(project), str(path), "--skip-invalid", "--rejects", str(tmp_path / "nodir" / "r.csv")]) == 1
    )
    assert dump(project) == before
    # an explicit rejects file, JSONL
    assert main(["ingest", str(project), str(path), "--skip-invalid", "--rejects", str(tmp_path / "r.jsonl")]) == 0
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 3
    verify_ok(project)
    # easl status lists the rejects of both --skip-invalid runs with their reasons, oldest first
    capsys.readouterr()
    assert main(["status", str(project), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["n_rejects"] == 6 and status["rejects_not_shown"] == 0
    assert [(r["location"], r["reason"]) for r in status["rejects"]] == 2 * [
        (f"{path}:4", "score: not a number ('high')"),
        (f"{path}:7", "score: 250 is outside the project's score range [0, 100]"),
        (f"{path}:9", "item_id: unknown item 'ghost'"),
    ]
    assert {r["source"] for r in status["rejects"]} == {str(path)}


def test_status_lists_the_most_recent_rejects_with_reasons(tmp_path, items_csv, capsys):
    project = tmp_path / "p.easl"
    assert main(["init", str(project), "--items", str(items_csv)]) == 0
    with Project.open(project) as p:
        for k in range(13):
            p.add_reject(
                source="label-studio" if k % 2 else "ann.csv",
                location=f"task {100 + k}",
                reason=f"result[0] (score_0): score {200 + k} is outside [0, 100]",
            )
        p.set_meta({"ls.last_reconciliation": "2026-11-22T06:00:00+00:00"})
    capsys.readouterr()
    assert main(["status", str(project), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["n_rejects"] == 13 and status["rejects_not_shown"] == 3
    assert [r["location"] for r in status["rejects"]] == [f"task {100 + k}" for k in range(3, 13)]
    assert status["rejects"][-1] == {
        "id": 13,
        "created_at": status["rejects"][-1]["created_at"],
        "source": "ann.csv",
        "location": "task 112",
        "reason": "result[0] (score_0): score 212 is outside [0, 100]",
    }
    assert status["events"] == {"pending": 0, "done": 0, "failed": 0}
    assert status["last_reconciliation"] == "2026-11-22T06:00:00+00:00"
    # the text form: the reasons, how many more, and where to see them all
    assert main(["status", str(project)]) == 0
    out = capsys.readouterr().out
    assert "most recent rejected annotations (10 of 13, oldest first):" in out
    assert "[label-studio] task 111: result[0] (score_0): score 211 is outside [0, 100]" in out
    assert "task 102" not in out
    assert f"... and 3 more (`easl ls status {project}` lists every Label Studio reject;" in out
    assert "2026-11-22T06:00:00+00:00" in out
    # --rejects N
    assert main(["status", str(project), "--json", "--rejects", "20"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert len(status["rejects"]) == 13 and status["rejects_not_shown"] == 0
    assert main(["status", str(project), "--rejects", "0"]) == 0
    out = capsys.readouterr().out
    assert "most recent rejected" not in out and "... and 13 more" in out
    with pytest.raises(SystemExit) as exc:
        main(["status", str(project), "--rejects", "-1"])
    assert exc.value.code == 2
    # easl ls status shares the reading code: every Label Studio reject, oldest first
    assert main(["ls", "status", str(project), "--json"]) == 0
    link = json.loads(capsys.readouterr().out)
    assert [r["location"] for r in link["rejects"]] == [f"task {100 + k}" for k in range(1, 13, 2)]


def test_user_and_usage_errors_exit_codes(tmp_path):
    missing = easl("status", str(tmp_path / "none.easl"))
    assert missing.returncode == 1 and "no such project file" in missing.stderr
    usage = easl("export", str(tmp_path / "none.easl"))  # --output is required
    assert usage.returncode == 2
    bad_ext = easl("ingest", str(tmp_path / "none.easl"), str(tmp_path / "a.xlsx"))
    assert bad_ext.returncode == 1


@pytest.mark.parametrize("command", ["init", "next", "ingest", "status", "export", "verify", "demo"])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert f"usage: easl {command}" in capsys.readouterr().out


def test_verify_detects_a_corrupted_cache(tmp_path, items_csv, capsys):
    project = tmp_path / "p.easl"
    assert main(["init", str(project), "--items", str(items_csv), "--method", "easl"]) == 0  # EASL's Beta state
    with Project.open(project) as p:
        p.ingest(answer(p.open_hits(), np.random.default_rng(4)), source="t")
        state = p.state()
        state["alpha"][3] += 0.5
        with p.transaction():
            conn = p.db.conn
            conn.execute("UPDATE state SET data = ? WHERE name = 'alpha'", (state["alpha"].tobytes(),))
    capsys.readouterr()
    assert main(["verify", str(project)]) == 1
    out = capsys.readouterr().out
    assert "verification FAILED" in out and "alpha 0.5" in out
    with Project.open(project) as p:
        assert p.rebuild()["ok"]
    verify_ok(project)


def test_simulated_demo_runs_and_writes_an_export(tmp_path):
    out = tmp_path / "demo.csv"
    kept = tmp_path / "demo.easl"
    result = easl(
        "demo", "--simulated", "--output", str(out), "--project", str(kept), "--iterations", "3", "--seed", "1"
    )
    assert result.returncode == 0, result.stderr
    assert "Spearman" in result.stdout and "verify: ok" in result.stdout
    est = pd.read_csv(out)
    assert len(est) == 109 and "oracle" in est.columns
    rho = est[["estimate", "oracle"]].corr(method="spearman").iloc[0, 1]
    assert rho > 0.8  # 4 iterations of 5-item HITs already rank 109 masses well
    with Project.open(kept) as p:
        assert p.iteration() == 3
        assert p.verify()["ok"]
