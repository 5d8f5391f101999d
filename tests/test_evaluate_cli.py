"""``easl evaluate``: file formats, JSON output, tables, --output, long form, and user errors."""

import json

import numpy as np
import pandas as pd
import pytest

import easl_toolkit.core.metrics as M
from easl_toolkit.tui.cli import main


def frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.normal(3, 1, n)
    h1 = np.clip(np.round(t + rng.normal(0, 0.5, n)), 1, 5)
    h2 = np.where(rng.random(n) < 0.6, np.clip(np.round(t + rng.normal(0, 0.5, n)), 1, 5), np.nan)
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "h1": h1,
            "h2": h2,
            "model": t + rng.normal(0, 0.4, n),
            "base": np.full(n, 3.0) + rng.normal(0, 0.01, n),
            "L1": rng.choice(["x", "y"], n),
        }
    )


def run_json(capsys, argv):
    code = main(argv + ["--json"])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def write(df, path):
    ext = path.suffix
    if ext == ".csv":
        df.to_csv(path, index=False)
    elif ext == ".tsv":
        df.to_csv(path, sep="\t", index=False)
    elif ext == ".jsonl":
        df.to_json(path, orient="records", lines=True, double_precision=15)
    else:
        df.to_parquet(path)
    return path


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_formats_give_the_same_result(tmp_path, capsys, ext):
    df = frame()
    path = write(df, tmp_path / f"scores{ext}")
    d = run_json(
        capsys,
        [
            "evaluate",
            str(path),
            "--human",
            "h1",
            "h2",
            "--system",
            "model",
            "base",
            "--id",
            "id",
            "--scale",
            "1",
            "5",
            "--group",
            "L1",
        ],
    )
    assert d["n_responses"] == len(df)
    assert set(d["systems"]) == {"model", "base"}
    obs = d["systems"]["model"]["observed"]
    assert obs["corr"] == pytest.approx(M.pearson_r(df.h1, df.model), abs=1e-12)
    assert d["systems"]["model"]["true_score"]["prmse"] == pytest.approx(
        M.prmse(df.model, df[["h1", "h2"]].to_numpy()), abs=1e-12
    )
    assert set(d["subgroups"]["L1"]) == {"x", "y"}


def test_tables_by_default(tmp_path, capsys):
    path = write(frame(), tmp_path / "s.csv")
    assert main(["evaluate", str(path), "--human", "h1", "h2", "--system", "model", "--scale", "1", "5"]) == 0
    out = capsys.readouterr().out
    assert "Observed scores" in out and "gwet_ac1" in out and "True scores" in out and "prmse" in out


def test_bootstrap_output_dir_and_json(tmp_path, capsys):
    path = write(frame(), tmp_path / "s.csv")
    out = tmp_path / "out"
    d = run_json(
        capsys,
        [
            "evaluate",
            str(path),
            "--human",
            "h1",
            "h2",
            "--system",
            "model",
            "--scale",
            "1",
            "5",
            "--bootstrap",
            "30",
            "--seed",
            "2",
            "--output",
            str(out),
            "--group",
            "L1",
        ],
    )
    lo, hi = d["systems"]["model"]["ci"]["prmse"]
    assert lo <= d["systems"]["model"]["true_score"]["prmse"] <= hi
    assert {
        "eval.csv",
        "eval_short.csv",
        "consistency.csv",
        "true_score_eval.csv",
        "eval_by_L1.csv",
        "fairness_L1.csv",
        "report.md",
        "prmse.png",
    } <= {p.name for p in out.iterdir()}
    written = json.loads((out / "evaluation.json").read_text())
    assert written["systems"]["model"]["ci"] == d["systems"]["model"]["ci"]
    eval_csv = pd.read_csv(out / "eval.csv")
    assert eval_csv.loc[0, "qwk"] == pytest.approx(d["systems"]["model"]["observed"]["qwk"])
    fair = d["fairness"]["L1"]["model"]
    assert set(fair["ci"]) == {"osa", "osd", "csd"}
    fair_csv = pd.read_csv(out / "fairness_L1.csv")
    osd = fair_csv[fair_csv.metric == "Overall score difference"].iloc[0]
    assert [osd.ci_low, osd.ci_high] == pytest.approx(fair["ci"]["osd"])
    assert osd.ci_low <= fair["osd"]["value"] <= osd.ci_high


def test_fairness_intervals_in_the_table(tmp_path, capsys):
    df = frame()
    df.loc[0, "L1"] = "solo"
    path = write(df, tmp_path / "s.csv")
    assert (
        main(
            [
                "evaluate",
                str(path),
                "--human",
                "h1",
                "h2",
                "--system",
                "model",
                "--scale",
                "1",
                "5",
                "--group",
                "L1",
                "--bootstrap",
                "20",
            ]
        )
        == 0
    )
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long notes
    assert "Fairness by L1" in out and "interval" in out and "osd" in out
    assert "interval n/a" in out and "solo has 1" in out


def test_null_with_reason_in_json(tmp_path, capsys):
    df = frame()
    df["flat"] = 2.0
    path = write(df, tmp_path / "s.csv")
    d = run_json(capsys, ["evaluate", str(path), "--human", "h1", "--system", "flat", "--scale", "1", "5"])
    obs = d["systems"]["flat"]["observed"]
    assert obs["corr"] is None and obs["corr_reason"]
    assert d["systems"]["flat"]["true_score"]["prmse"] is None
    assert d["systems"]["flat"]["true_score"]["prmse_reason"]


def test_rater_error_variance_and_exclude_zeros(tmp_path, capsys):
    df = frame()
    df.loc[0, "h1"] = 0
    df.loc[1, "h2"] = 0
    path = write(df, tmp_path / "s.csv")
    d = run_json(
        capsys,
        [
            "evaluate",
            str(path),
            "--human",
            "h1",
            "h2",
            "--system",
            "model",
            "--exclude-zeros",
            "--rater-error-variance",
            "0.25",
        ],
    )
    assert d["n_dropped"] == 1 and d["dropped"] == {"first human score is 0 (zeros excluded)": 1}
    assert d["systems"]["model"]["true_score"]["rater_error_variance"] == 0.25


def test_long_form(tmp_path, capsys):
    df = frame(40)
    rows = []
    for _, r in df.iterrows():
        rows.append({"item_id": r.id, "annotator": "ann_a", "score": r.h1})
        if np.isfinite(r.h2):
            rows.append({"item_id": r.id, "annotator": "ann_b", "score": r.h2})
        rows.append({"item_id": r.id, "annotator": "model", "score": r.model})
    long = pd.DataFrame(rows)
    long["estimate"] = long["item_id"].map(dict(zip(df.id, df.model)))
    path = write(long, tmp_path / "ratings.csv")
    d = run_json(
        capsys,
        [
            "evaluate",
            str(path),
            "--long",
            "item_id,annotator,score",
            "--system",
            "model",
            "estimate",
            "--scale",
            "1",
            "5",
        ],
    )
    assert d["n_responses"] == 40
    assert d["human_columns"] == ["ann_a", "ann_b"]
    assert d["systems"]["model"]["observed"] == d["systems"]["estimate"]["observed"]
    assert d["systems"]["model"]["true_score"]["prmse"] == pytest.approx(
        M.prmse(df.model, df[["h1", "h2"]].to_numpy()), abs=1e-12
    )


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--human", "h1", "--system", "nope"], "no system score column 'nope'"),
        (["--human", "hx", "--system", "model"], "no human score column 'hx'"),
        (["--human", "h1", "--system", "model", "--group", "g"], "no group column 'g'"),
        (["--human", "h1", "--system", "L1"], "column 'L1' has a non-numeric value"),
        (["--system", "model"], "--human is required"),
        (["--human", "h1", "--system", "model", "--scale", "5", "1"], "--scale"),
        (["--human", "h1", "--system", "model", "--bootstrap", "-3"], "--bootstrap"),
        (["--human", "L1", "--system", "model"], "column 'L1' has a non-numeric value"),
    ],
)
def test_user_errors(tmp_path, capsys, argv, message):
    path = write(frame(), tmp_path / "s.csv")
    code = main(["evaluate", str(path), *argv])
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and ("s.csv" in err or message.startswith("--"))


def test_non_numeric_system_value_names_the_line(tmp_path, capsys):
    df = frame()
    df["model"] = df["model"].astype(object)
    df.loc[4, "model"] = "oops"
    path = write(df, tmp_path / "s.csv")
    assert main(["evaluate", str(path), "--human", "h1", "--system", "model"]) == 1
    err = capsys.readouterr().err
    assert "s.csv:6: column 'model' has a non-numeric value 'oops'" in err


def test_non_numeric_human_value_is_dropped_and_counted(tmp_path, capsys):
    df = frame()
    df["h1"] = df["h1"].astype(object)
    df.loc[3, "h1"] = "TL"
    path = write(df, tmp_path / "s.csv")
    d = run_json(capsys, ["evaluate", str(path), "--human", "h1", "--system", "model"])
    assert d["dropped"] == {"first human score missing or non-numeric": 1}


def test_file_not_found_and_bad_type(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "missing.csv"), "--human", "h", "--system", "s"]) == 1
    assert "missing.csv: no such file" in capsys.readouterr().err
    bad = tmp_path / "s.xlsx"
    bad.write_text("x")
    assert main(["evaluate", str(bad), "--human", "h", "--system", "s"]) == 1
    assert "cannot tell the file format" in capsys.readouterr().err


def test_duplicate_ids(tmp_path, capsys):
    df = frame()
    df.loc[5, "id"] = df.loc[2, "id"]
    path = write(df, tmp_path / "s.csv")
    assert main(["evaluate", str(path), "--human", "h1", "--system", "model", "--id", "id"]) == 1
    assert "s.csv:7: column 'id' repeats the id 'r2'" in capsys.readouterr().err


def test_usage_error_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "x.csv", "--human", "h1"])
    assert exc.value.code == 2


def test_project_flow_evaluates_a_system_against_a_campaign(tmp_path, capsys):
    """``easl evaluate --project P --system scores.csv --raw-ratings``: every annotator a rater with the ratings as
    given, PRMSE from the campaign (the annotator-corrected default: tests/test_evaluate_project_raters.py)."""
    n = 30
    rng = np.random.default_rng(4)
    latent = rng.uniform(10, 90, n)
    items = pd.DataFrame({"id": [f"i{k:02d}" for k in range(n)], "text": [f"item {k}" for k in range(n)]})
    items.to_csv(tmp_path / "items.csv", index=False)
    project = tmp_path / "work.easl"
    assert main(["init", str(project), "--items", str(tmp_path / "items.csv"), "--hit-size", "5"]) == 0
    assert main(["next", str(project), "--output", str(tmp_path / "hits.jsonl")]) == 0
    hits = [json.loads(line) for line in (tmp_path / "hits.jsonl").read_text().splitlines()]
    rows = []
    for hit in hits:
        for item in hit["items"]:
            k = int(item["item_id"][1:])
            for who in ("ann", "bob"):
                score = float(np.clip(round(latent[k] + rng.normal(0, 8)), 0, 100))
                rows.append({"hit_id": hit["hit_id"], "item_id": item["item_id"], "score": score, "annotator": who})
    pd.DataFrame(rows).to_csv(tmp_path / "ann.csv", index=False)
    assert main(["ingest", str(project), str(tmp_path / "ann.csv")]) == 0
    capsys.readouterr()
    rated = sorted({r["item_id"] for r in rows})
    scores = pd.DataFrame({"item_id": rated, "model": [latent[int(i[1:])] + 3.0 for i in rated]})
    scores.to_csv(tmp_path / "scores.csv", index=False)
    d = run_json(
        capsys,
        ["evaluate", "--project", str(project), "--system", str(tmp_path / "scores.csv"), "--raw-ratings", "--json"],
    )
    assert sorted(d["human_columns"]) == ["ann", "bob"]
    assert d["scale"]["min"] == 0 and d["scale"]["max"] == 100
    ts = d["systems"]["model"]["true_score"]
    assert ts["N"] == len(rated) and ts["N_multiple"] == len(rated) and ts["N_raters"] == 2
    h = pd.DataFrame(rows).pivot(index="item_id", columns="annotator", values="score").loc[rated]
    assert ts["prmse"] == pytest.approx(M.prmse(scores["model"], h[d["human_columns"]].to_numpy()), abs=1e-12)
    assert d["all_raters"]["raters"] == d["human_columns"] and d["all_raters"]["N"] == len(rated)
    assert main(["evaluate", "--project", str(project), "--system", str(tmp_path / "scores.csv")]) == 0
    assert "Agreement among all 2 human raters" in capsys.readouterr().out


def test_fairness_against_a_chosen_base_group(tmp_path, capsys):
    path = write(frame(), tmp_path / "s.csv")
    base = run_json(
        capsys, ["evaluate", str(path), "--human", "h1", "h2", "--system", "model", "--group", "L1", "--json"]
    )["fairness"]["L1"]["model"]
    other = next(g for g in base["groups"] if g != base["base_group"])
    d = run_json(
        capsys,
        [
            "evaluate",
            str(path),
            "--human",
            "h1",
            "h2",
            "--system",
            "model",
            "--group",
            "L1",
            "--base-group",
            other,
            "--json",
        ],
    )["fairness"]["L1"]["model"]
    assert d["base_group"] == other and d["osd"]["value"] == pytest.approx(base["osd"]["value"], abs=1e-12)
    lo, hi = d["osd"]["estimates_ci"]["Intercept"]
    assert lo <= d["osd"]["estimates"]["Intercept"] <= hi and 0 <= d["osd"]["estimates_p_value"]["Intercept"] <= 1
    assert (
        main(["evaluate", str(path), "--human", "h1", "--system", "model", "--group", "L1", "--base-group", "nope"])
        == 1
    )


def test_more_weightings_for_the_all_raters_block(tmp_path, capsys):
    df = frame()
    df["h3"] = np.clip(df["h1"] + np.where(np.arange(len(df)) % 4 == 0, 1, 0), 1, 5)
    path = write(df, tmp_path / "s.csv")
    d = run_json(
        capsys,
        [
            "evaluate",
            str(path),
            "--human",
            "h1",
            "h2",
            "h3",
            "--system",
            "model",
            "--scale",
            "1",
            "5",
            "--weights",
            "ordinal",
            "circular",
            "--json",
        ],
    )
    allr = d["all_raters"]
    ratings = df[["h1", "h2", "h3"]].to_numpy()
    for w in ("ordinal", "circular"):
        want = M.agreement_inference(ratings, np.arange(1, 6), weights=w)
        assert allr[f"gwet_ac2_{w}"] == pytest.approx(want["gwet"].value, abs=1e-12)
        assert allr["analytic"][f"conger_kappa_{w}"]["se"] == pytest.approx(want["conger"].se, abs=1e-12)
    assert allr["krippendorff_alpha_ratio"] == pytest.approx(M.krippendorff_alpha(ratings, level="ratio"), abs=1e-12)
