"""``easl simulate campaign``: the shipped WMT23 MQM and MLQE-PE sets, the replay's draws, the command end to end, bad
input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.datasets import mlqe_pe_roen_ratings, wmt23_mqm_ratings
from easl_toolkit.core.errors import InputError
from easl_toolkit.core.simulate.campaign_replay import check_ratings, draw_replay, shipped_ratings
from easl_toolkit.tui.cli import main


def test_the_shipped_mqm_set_has_the_documented_shape_and_scores():
    d = wmt23_mqm_ratings()
    assert d.shape == (936, 12)
    assert list(d.columns[:6]) == ["response_id", "mt_system", "doc", "paragraph", "system", "chrf"]
    humans = d[["human_1", "human_2", "human_3"]].to_numpy()
    assert np.isfinite(humans).all() and (humans <= 0).all()
    assert d["mt_system"].nunique() == 9 and d.groupby("mt_system").size().eq(104).all()
    assert d["response_id"].is_unique
    # the system is chrF on the human scale: a line of chrF whose mean is the human mean
    assert np.corrcoef(d["system"], d["chrf"])[0, 1] == pytest.approx(1.0, abs=1e-6)
    assert d["system"].mean() == pytest.approx(humans.mean(), abs=0.01)
    assert 0.1 < np.corrcoef(d["system"], d["human_2"])[0, 1] < 0.3


def test_the_shipped_mlqe_set_has_the_documented_shape_and_figures():
    d = mlqe_pe_roen_ratings()
    assert d.shape == (1000, 10)
    assert list(d.columns[:4]) == ["response_id", "doc", "system", "model_score"]
    humans = d[[f"human_{k}" for k in range(1, 7)]].to_numpy()
    assert np.isfinite(humans).all() and (humans >= 0).all() and (humans <= 100).all()
    assert np.array_equal(humans, np.round(humans))
    assert d["response_id"].is_unique and d["doc"].nunique() == 100
    assert (d["model_score"] < 0).all()  # a mean log-probability
    # the system is the model's log-probability on the human scale: a line of it whose mean is the human mean
    assert np.corrcoef(d["system"], d["model_score"])[0, 1] == pytest.approx(1.0, abs=1e-6)
    assert d["system"].mean() == pytest.approx(humans.mean(), abs=0.01)
    assert np.corrcoef(d["system"], humans.mean(axis=1))[0, 1] == pytest.approx(0.641, abs=0.001)
    hh = np.corrcoef(humans.T)[np.triu_indices(6, 1)]
    assert hh.min() == pytest.approx(0.64, abs=0.005) and hh.max() == pytest.approx(0.93, abs=0.005)


def test_each_shipped_set_replays_under_its_own_name():
    for name, n, k in (("wmt23_mqm_ende", 936, 3), ("mlqe_pe_roen", 1000, 6)):
        data = shipped_ratings(name)
        assert (data.name, data.n_responses, data.human.shape[1]) == (name, n, k)
    assert shipped_ratings().name == "wmt23_mqm_ende"


def test_a_replayed_campaign_pairs_two_different_real_ratings_of_one_response():
    row = np.arange(60.0)
    frame = pd.DataFrame({"system": row, "human_1": 10 * row, "human_2": 10 * row + 1, "human_3": 10 * row + 2})
    world = draw_replay(check_ratings(frame), (3, 500), np.random.default_rng(0))
    drawn = world.systems[..., 0]
    assert np.all(np.floor(world.first / 10) == drawn) and np.all(np.floor(world.second / 10) == drawn)
    assert np.all(world.first != world.second)
    assert len(np.unique(drawn)) == 60


def test_a_replay_uses_every_ordered_pair_of_ratings_equally_often():
    frame = pd.DataFrame({"system": np.zeros(50), "human_1": 1.0, "human_2": 2.0, "human_3": 3.0})
    world = draw_replay(check_ratings(frame), (1, 60_000), np.random.default_rng(1))
    pairs = pd.Series(list(zip(world.first[0], world.second[0], strict=True))).value_counts(normalize=True)
    assert len(pairs) == 6 and np.allclose(pairs.to_numpy(), 1 / 6, atol=0.01)


def test_a_response_with_one_rating_only_takes_its_two_real_ones():
    frame = pd.DataFrame({"system": np.arange(60.0), "human_1": 1.0, "human_2": 2.0, "human_3": np.nan})
    world = draw_replay(check_ratings(frame), (2, 400), np.random.default_rng(2))
    assert set(np.unique(world.first)) == {1.0, 2.0}
    assert np.all(world.first + world.second == 3.0)


def test_the_command_writes_the_report_tables_and_figures_and_prints_the_budgets(tmp_path, capsys):
    out = tmp_path / "campaign"
    assert main(["simulate", "campaign", "--campaigns", "12", "--budgets", "0.2,0.5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "wmt23_mqm_ende: 12 campaigns\n  true human-system r 0.17" in printed
    for design in ("classical", "uniform", "active", "oracle"):
        assert f"  {design} " in printed
    assert (out / "report.md").read_text().startswith("# Evaluation-campaign study")
    for table in ("cells", "coverage", "budget_ratio", "budget_for_width", "never_worse"):
        assert (out / "tables" / f"{table}.csv").is_file()
    need = pd.read_csv(out / "tables" / "budget_for_width.csv")
    assert set(need["design"]) == {"classical", "uniform", "active", "wrong", "oracle"}
    cells = pd.read_csv(out / "tables" / "cells.csv")
    assert cells["n"].eq(12).all() and set(cells["budget"]) == {0.2, 0.5}
    assert len(list((out / "figures").glob("*.png"))) == 1


def test_the_command_replays_the_shipped_set_it_is_given(tmp_path, capsys):
    out = tmp_path / "mlqe"
    argv = ["simulate", "campaign", "--dataset", "mlqe_pe_roen", "--campaigns", "6", "--budgets", "0.2,0.5"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "mlqe_pe_roen: 6 campaigns\n  true human-system r 0.58" in capsys.readouterr().out
    assert "Replay: MLQE-PE Romanian-English" in (out / "report.md").read_text()


def test_the_command_plans_campaigns_of_several_iterations_with_one_target_per_design(tmp_path, capsys):
    out = tmp_path / "per-target"
    argv = ["simulate", "campaign", "--study", "simulated", "--raters", "high", "--system-r", "0.9"]
    argv += ["--responses", "400", "--campaigns", "6", "--budgets", "0.2,0.4", "--iterations", "3", "--per-target"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "high raters, system r 0.9 with the true score: 6 campaigns" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert "then 3 iteration(s); the active, wrong and oracle designs allocate for each observed metric alone" in report
    cells = pd.read_csv(out / "tables" / "cells.csv")
    active = cells[(cells["design"] == "active") & (cells["family"] == "observed")]
    assert set(active["metric"]) == {"mean", "r", "qwk", "rmse"}


def test_the_command_runs_the_simulated_raters_and_a_pilot_file(tmp_path, capsys):
    rng = np.random.default_rng(3)
    t = rng.normal(3, 1, 200)
    pilot = pd.DataFrame({"id": range(200), "judge": t + rng.normal(0, 0.5, 200)})
    for k in (1, 2):
        pilot[f"human_{k}"] = np.round(t + rng.normal(0, 0.5, 200))
    pilot.loc[5, "human_2"] = np.nan
    pilot["human_3"] = np.where(np.arange(200) == 5, 3.0, np.nan)
    path = tmp_path / "pilot.csv"
    pilot.to_csv(path, index=False)
    argv = ["simulate", "campaign", "--ratings", str(path), "--system-column", "judge", "--study", "both"]
    argv += ["--raters", "high", "--system-r", "0.9", "--responses", "300", "--campaigns", "8"]
    argv += ["--budgets", "0.2,0.4", "--metric", "mean", "--width", "0.2", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "pilot: 8 campaigns" in printed and "high raters, system r 0.9 with the true score: 8 campaigns" in printed
    need = pd.read_csv(tmp_path / "o" / "tables" / "budget_for_width.csv")
    assert need["width"].eq(0.2).all() and need["metric"].eq("mean").all()


BAD = {
    "no system column": ("id,score,human_1,human_2\n", "no column 'system'"),
    "one human column": ("system,human_1,rating\n", "two or more human-score columns"),
    "one rating on a row": ("system,human_1,human_2\n", "line 9: fewer than 2 human scores"),
    "a word for a score": ("system,human_1,human_2\n", "line 4, column 'human_2': 'good' is not a number"),
    "an infinite system score": ("system,human_1,human_2\n", "line 6, column 'system': infinite value"),
    "no system score": ("system,human_1,human_2\n", "line 7: no system score"),
}


def _bad_file(tmp_path, case: str) -> str:
    header, _ = BAD[case]
    n = len(header.strip().split(","))
    rows = [",".join(["3"] * n) for _ in range(60)]
    if case == "one rating on a row":
        rows[7] = "3,4,"
    elif case == "a word for a score":
        rows[2] = "3,4,good"
    elif case == "an infinite system score":
        rows[4] = "inf,4,4"
    elif case == "no system score":
        rows[5] = ",4,4"
    path = tmp_path / "bad.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    return str(path)


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_ratings_get_one_located_error_and_nothing_is_written(tmp_path, capsys, case):
    path = _bad_file(tmp_path, case)
    out = tmp_path / "out"
    assert main(["simulate", "campaign", "--ratings", path, "--campaigns", "4", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and BAD[case][1] in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_too_few_responses_and_bad_options_are_refused(tmp_path, capsys):
    frame = pd.DataFrame({"system": [1.0] * 10, "human_1": 1.0, "human_2": 2.0})
    with pytest.raises(InputError, match="10 responses; a replay needs at least 50"):
        check_ratings(frame)
    options = (
        ["--width", "0"],
        ["--budgets", "0.2"],
        ["--raters", "perfect"],
        ["--system-r", "1.5"],
        ["--iterations", "0"],
    )
    simulated = (
        ["--study", "simulated", "--ratings", "pilot.csv"],
        ["--study", "simulated", "--dataset", "mlqe_pe_roen"],
    )
    for option in (*options, *simulated, ["--dataset", "mlqe_pe_roen", "--ratings", "pilot.csv"]):
        assert main(["simulate", "campaign", *option, "--out", str(tmp_path / "o")]) == 1
        assert capsys.readouterr().err.startswith("error: --")
    assert not (tmp_path / "o").exists()
