"""``easl simulate replay``: real ratings replayed through the engine (core/simulate/replay*.py), the shipped study
(core/datasets.py), and the located errors of bad ratings files."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from easl_toolkit.core.datasets import agh_tv_items, agh_tv_ratings
from easl_toolkit.core.errors import InputError
from easl_toolkit.core.simulate.replay import assign, run_one, run_replay, split, zscore
from easl_toolkit.core.simulate.replay_data import Ratings, annotator_agreement, code_ratings, shipped_ratings
from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main


def _slice(n_items: int = 40) -> Ratings:
    """The shipped study's first ``n_items`` items, every rating of them."""
    frame = agh_tv_ratings()
    keep = frame["item_id"].astype(int) < n_items
    return code_ratings(frame[keep], annotator_column="annotator_id", scale=(1, 5), source="slice")


def test_the_shipped_study_is_whole_with_its_licence():
    frame = agh_tv_ratings()
    assert frame.shape == (17820, 3) and frame["annotator_id"].nunique() == 99 and frame["item_id"].nunique() == 320
    assert frame["score"].between(1, 5).all()
    assert len(agh_tv_items()) == 320
    from importlib import resources

    folder = resources.files("easl_toolkit.core") / "data" / "agh_tv_quality_2017"
    assert "Apache License" in (folder / "LICENSE").read_text()
    assert (folder / "NOTICE.md").is_file() and "sureal" in (folder / "README.md").read_text()


def test_split_holds_out_half_of_each_items_ratings_and_pools_the_rest():
    r = _slice(30)
    truth, pool = split(r, seed=4)
    n_i = r.per_item()
    pooled = (~np.isnan(pool)).sum(axis=1)
    assert np.array_equal(pooled, n_i - n_i // 2)  # each annotator rates an item once in this study
    assert np.all((truth >= 0) & (truth <= 1))
    # the held-out ratings and the pool partition the item's ratings: their sums add up
    total = np.bincount(r.item, r.score, r.n_items)
    assert np.allclose(truth * (n_i // 2) + np.nansum(pool, axis=1), total)
    t2, p2 = split(r, seed=4)
    assert np.array_equal(truth, t2) and np.array_equal(np.isnan(pool), np.isnan(p2))
    assert not np.array_equal(np.isnan(split(r, seed=5)[1]), np.isnan(pool))


@given(st.integers(0, 2**32 - 1), st.integers(2, 5), st.integers(1, 8))
def test_assign_uses_each_pool_rating_at_most_once_and_keeps_a_hit_with_one_annotator(seed, hit_size, n_hits):
    rng = np.random.default_rng(seed)
    available = rng.random((12, 7)) < 0.6
    before = available.copy()
    hits = np.array([rng.choice(12, hit_size, replace=False) for _ in range(n_hits)])
    items, anns = assign(hits, available, rng)
    assert np.all(before[items, anns])  # every rating drawn was in the pool
    assert len(set(zip(items.tolist(), anns.tolist()))) == items.size  # none twice
    assert np.array_equal(before & ~available, np.isin(np.arange(12)[:, None] * 7 + np.arange(7), items * 7 + anns))
    start = 0
    left = before.copy()
    for hit in hits:
        hit = hit[left[hit].any(axis=1)]
        if hit.size == 0:
            continue  # every item of the HIT spent: the HIT gets no score
        got = anns[start : start + hit.size]
        if left[hit].all(axis=0).any():
            assert np.unique(got).size == 1  # one real annotator who rated all the HIT's items
        left[hit, got] = False
        start += hit.size
    assert start == items.size


def test_zscore_gives_each_annotator_mean_0_and_sd_1():
    rng = np.random.default_rng(0)
    ann = rng.integers(4, size=200)
    x = rng.random(200) * (ann + 1) + ann
    z = zscore(ann, x, 4)
    for a in range(4):
        assert abs(z[ann == a].mean()) < 1e-12 and abs(z[ann == a].std(ddof=1) - 1) < 1e-12


def test_every_method_runs_on_the_same_split_and_da_z_shares_das_data():
    r = _slice(40)
    kw = {"max_per_item": 4.0, "batch_hits": 4}
    da = pd.DataFrame(run_one(r, "da", 3, **kw)["rows"])
    alone = pd.DataFrame(run_one(r, "da-z", 3, **kw)["rows"])
    assert set(da["method"]) == {"da", "da-z"}
    assert np.allclose(da[da["method"] == "da-z"]["spearman"].to_numpy(), alone["spearman"].to_numpy(), equal_nan=True)
    for method in ("easl", "aware", "ra", "trueskill"):
        out = run_one(r, method, 3, **kw)
        rows = pd.DataFrame(out["rows"])
        assert rows["per_item"].iloc[-1] == pytest.approx(4.0, abs=0.2)
        assert rows["spearman"].between(-1, 1).all()
        assert out["reliability"] == run_one(r, "da", 3, **kw)["reliability"]  # one split per seed
    assert run_one(r, "aware", 3, **kw)["annotators"]["flag"].isin(["", "random", "noisy", "collapsed"]).all()


def test_replay_reports_budgets_savings_and_flags_for_every_method():
    r = _slice(60)
    res = run_replay(r, methods=("da", "da-z", "aware"), n_seeds=3, targets=(0.8, 0.99), max_per_item=5.0)
    budget = res["budget"].set_index(["target", "method"])
    assert set(budget.index.get_level_values("method")) == {"da", "da-z", "aware"}
    assert np.isnan(budget.loc[(0.99, "da"), "budget"])  # above what DA reaches on 60 items
    row = budget.loc[(0.8, "aware")]
    assert row["saved_vs_da_low"] <= row["saved_vs_da"] <= row["saved_vs_da_high"]
    assert row["ratio_to_da"] == pytest.approx(row["budget"] / budget.loc[(0.8, "da"), "budget"])
    assert len(res["reliability"]) == 3 and res["reliability"]["spearman"].between(0, 1).all()
    assert res["targets"] == (0.8, 0.99) and not res["targets_from_data"]
    flags = res["flags"]
    assert len(flags) == r.n_annotators and flags["random"].between(0, 1).all()
    again = run_replay(r, methods=("da", "da-z", "aware"), n_seeds=3, targets=(0.8, 0.99), max_per_item=5.0)
    pd.testing.assert_frame_equal(res["budget"], again["budget"])  # same seeds, same numbers


def test_annotator_agreement_matches_a_direct_computation():
    r = _slice(50)
    ag = annotator_agreement(r)
    frame = pd.DataFrame({"i": r.item, "a": r.annotator, "x": r.score})
    a = int(np.nanargmin(ag))
    mine = frame[frame["a"] == a]
    others = frame[frame["a"] != a].groupby("i")["x"].mean()
    assert ag[a] == pytest.approx(np.corrcoef(mine["x"], others.loc[mine["i"]].to_numpy())[0, 1])


def test_cli_replays_a_slice_of_the_shipped_study_and_writes_the_report(tmp_path, capsys):
    frame = agh_tv_ratings()
    path = tmp_path / "pilot.csv"
    frame[frame["item_id"].astype(int) < 50].to_csv(path, index=False)
    out = tmp_path / "rep"
    argv = ["simulate", "replay", str(path), "--scale", "1", "5", "--methods", "da,aware", "--runs", "2"]
    assert main([*argv, "--targets", "0.8", "--max-per-item", "4", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "split-half reliability of the truth: Spearman" in printed and "ceiling: Spearman" not in printed
    assert "aware" in printed and "warning: 2 runs are too few" in printed
    for name in ("curves", "budget", "reliability", "best", "flags", "mean_curves"):
        assert (out / "tables" / f"{name}.csv").stat().st_size > 0
    assert (out / "figures" / "curves.png").read_bytes()[:4] == b"\x89PNG"
    text = (out / "report.md").read_text()
    assert "Replay of real ratings: " in text and "x DA" in text and "too few" in text
    assert f"Command: `easl simulate replay {path} --scale 1.0 5.0 --methods da,aware --targets 0.8 --runs 2" in text


@pytest.mark.parametrize(
    ("rows", "options", "message"),
    [
        ("item_id,rater,score\na,x,1\n", [], "column 'annotator' is missing (the columns are: item_id, rater, score)"),
        ("item_id,annotator,score\n" + "a,x,1\na,y,2\na,z,oops\na,w,3\n", [], ":4: field 'score': 'oops' is not"),
        ("item_id,annotator,score\n" + "a,x,1\na,y,2\na,z,3\na,w,3\nb,x,1\n", [], ":6: item 'b' has 1 rating;"),
        ("item_id,annotator,score\n" + "a,x,1\na,x,2\na,x,3\na,x,3\n", [], "every rating is by one annotator ('x')"),
        ("item_id,annotator,score\n" + "a,x,1\na,y,2\na,z,9\na,w,3\n", ["--scale", "1", "5"], ":4: field 'score': 9"),
    ],
)
def test_bad_ratings_are_one_located_error_and_nothing_is_written(tmp_path, capsys, rows, options, message):
    path = tmp_path / "bad.csv"
    path.write_text(rows)
    out = tmp_path / "rep"
    assert main(["simulate", "replay", str(path), *options, "--runs", "1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err and str(path) in err
    assert not out.exists()


def test_shipped_ratings_agree_with_the_studys_readme():
    r = shipped_ratings()
    ag = annotator_agreement(r)
    assert r.scale == (1.0, 5.0) and np.nanmin(ag) >= 0.44 and int((ag >= 0.58).sum()) == 98


def test_code_ratings_refuses_an_empty_id():
    frame = pd.DataFrame({"item_id": ["a"] * 4, "annotator": ["x", "", "y", "z"], "score": [1, 2, 3, 4]})
    with pytest.raises(InputError, match="row 2: field 'annotator' is empty"):
        code_ratings(frame)


def test_demo_replays_real_annotators_beside_da_and_keeps_the_project(tmp_path, easl_cli):
    kept, out = tmp_path / "demo.easl", tmp_path / "demo.csv"
    result = easl_cli("demo", "--project", str(kept), "--output", str(out), "--max-per-item", "5")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "aware (default)" in text and "annotations saved" in text and "verify: ok" in text
    assert "Apache-2.0" in text  # the source and licence notice beside the data
    est = pd.read_csv(out)
    assert len(est) == 320 and est["estimate"].between(1, 5).all()
    assert est["ci_low"].ge(1).all() and est["ci_high"].le(5).all()
    with Project.open(kept) as project:
        assert project.hyper.method == "aware" and (project.hyper.score_min, project.hyper.score_max) == (1, 5)
        assert project.hyper.stop_at == 0.93  # the demo's target, which the monitor shows as the stop target
        ratings = project.ratings()
        assert set(ratings["annotator"]) <= set(agh_tv_ratings()["annotator_id"])  # the real annotator ids
        assert project.verify()["ok"]
    assert easl_cli("demo", "--project", str(kept)).returncode == 1  # never over an existing file


def test_the_demo_table_ends_each_curve_where_the_summary_says_it_crossed_the_target():
    import argparse

    from rich.console import Console

    from easl_toolkit.tui.commands.demo_real import _budget_to, _curve_table

    curves = {
        "aware": [(1.0, 0.8), (1.25, 0.85), (1.5, 0.9)],  # a run stops where it first reaches the target
        "da": [(1.0, 0.8), (1.25, 0.82), (1.5, 0.84), (1.75, 0.86), (2.0, 0.88), (2.25, 0.91)],
    }
    args = argparse.Namespace(target=0.9, max_per_item=3.0)
    console = Console(width=120, record=True)
    console.print(_curve_table(curves, args, 320))
    text = console.export_text()
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert [r.split("│")[1].strip() for r in rows] == ["1", "1.5", "2", "2.25"]
    assert "0.900 *" in rows[1] and "0.910 *" in rows[3]  # the first point at or above the target, marked
    assert "every 0.25 scores per video" in text
    assert _budget_to(curves["da"], 0.9) == pytest.approx(2.0 + 0.25 * (0.02 / 0.03))  # between 2 and 2.25


def test_assign_skips_a_hit_whose_items_are_all_spent():
    available = np.zeros((4, 3), dtype=bool)
    available[2:, :] = True
    items, anns = assign(np.array([[0, 1], [2, 3]]), available, np.random.default_rng(352))
    assert items.tolist() == [2, 3] and anns[0] == anns[1]  # the first HIT left out, the second to one annotator
    assert not available[2:].all()


def _crowd(path, n_items: int = 150, n_workers: int = 40, per_item: int = 15, seed: int = 7) -> None:
    """A crowd-like ratings file on 0-100: many workers of uneven activity, ``per_item`` ratings per item, each
    worker with an offset, a slope and a noise of their own, and a fifth of them clicking at random."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(50, 15, n_items)
    offset, slope = rng.normal(0, 10, n_workers), rng.lognormal(0, 0.3, n_workers)
    noise, clicker = rng.uniform(8, 20, n_workers), rng.random(n_workers) < 0.2
    activity = rng.lognormal(0, 1, n_workers)
    rows = []
    for i in range(n_items):
        w = rng.choice(n_workers, per_item, replace=False, p=activity / activity.sum())
        x = 50 + slope[w] * (quality[i] - 50) + offset[w] + rng.normal(0, noise[w])
        x = np.clip(np.round(np.where(clicker[w], rng.uniform(0, 100, per_item), x)), 0, 100)
        rows += [(f"i{i}", f"w{a}", v) for a, v in zip(w, x)]
    pd.DataFrame(rows, columns=["item_id", "annotator", "score"]).to_csv(path, index=False)


@pytest.mark.filterwarnings("error")
def test_a_crowd_replay_with_default_targets_names_a_budget_for_every_method_without_warnings(tmp_path, capsys):
    path = tmp_path / "crowd.csv"
    _crowd(path)
    out = tmp_path / "rep"
    assert main(["simulate", "replay", str(path), "--scale", "0", "100", "--runs", "5", "--out", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert "Warning" not in err and "slice" not in err  # numpy's empty-slice warnings are gone at the source
    assert "targets, chosen below the best Spearman reached" in printed and "warning" not in printed
    budget = pd.read_csv(out / "tables" / "budget.csv")
    lowest = budget[budget["target"] == budget["target"].min()].set_index("method")
    assert lowest["budget"].notna().all()  # every method, DA included, reaches the lowest target chosen
    assert lowest.loc["aware", "ratio_to_da"] < 1
    for method in ("DA (z-scores)", "EASL (paper)", "aware"):
        assert re.search(rf"  {re.escape(method)} +\d+\.\d\d  \d\.\d\dx DA  [+-]\d+% saved", printed), method
    best = pd.read_csv(out / "tables" / "best.csv").set_index("method")["best"]
    split_half = pd.read_csv(out / "tables" / "reliability.csv")["spearman"].mean()
    assert best["aware"] > split_half  # the split-half reliability is no ceiling for a model of the annotators
    text = (out / "report.md").read_text()
    assert f"Command: `easl simulate replay {path} --scale 0.0 100.0 --runs 5 --out {out}`" in text
    assert "ceiling (" not in text.lower() and "cannot be reached" not in text


def test_the_curve_figure_holds_every_curve_and_target(tmp_path):
    from easl_toolkit.core.simulate.replay_report import curve_figure

    r = _slice(40)
    res = run_replay(r, methods=("da", "aware"), n_seeds=3, max_per_item=4.0, batch_hits=4)
    batch = 4 * 5 / r.n_items
    fig = curve_figure(res, batch, res["targets"])
    means = res["mean_curves"]
    for ax, value in zip(fig.axes, ("spearman", "kendall")):
        low, high = ax.get_ylim()
        assert low <= means[value].min() and means[value].max() <= high, value
    assert all(fig.axes[0].get_ylim()[0] <= t <= fig.axes[0].get_ylim()[1] for t in res["targets"])


def test_default_targets_are_a_ladder_below_the_best_spearman_reached():
    r = _slice(60)
    res = run_replay(r, methods=("da", "aware"), n_seeds=2, max_per_item=5.0)
    top = res["best"]["best"].max()
    assert res["targets_from_data"] and len(res["targets"]) >= 3
    assert all(t < top for t in res["targets"]) and max(res["targets"]) >= round(top - 0.03, 2)
    budget = res["budget"]
    assert budget[budget["target"] == min(res["targets"])]["budget"].notna().all()


@pytest.mark.filterwarnings("error")
def test_seed_mean_is_nan_where_no_seed_has_a_value_without_a_warning():
    from easl_toolkit.core.simulate.replay import seed_mean

    mat = np.array([[0.5, np.nan, np.nan], [0.7, 0.8, np.nan]])
    out = seed_mean(mat)
    assert out[0] == pytest.approx(0.6) and out[1] == pytest.approx(0.8) and np.isnan(out[2])


def test_the_few_runs_warning_starts_below_five_seeds():
    from easl_toolkit.core.simulate.replay_report import few_runs_warning

    assert "2 runs are too few" in few_runs_warning(2) and few_runs_warning(5) is None
