"""`easl simulate easl`: annotator model, oracles, and campaigns through the real engine and project file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.errors import EaslError, HyperParameterError, InputError
from easl_toolkit.core.simulate import annotation
from easl_toolkit.core.store import Project
from easl_toolkit.tui import cli


def test_annotator_scores_are_latent_plus_noise_clipped():
    rng = np.random.default_rng(0)
    model = annotation.AnnotatorModel(noise_sd=0.1, n_annotators=4, bias_sd=0.0)
    pool = model.draw_pool(rng)
    latent = np.full(20000, 0.5)
    s = model.score(latent, rng.integers(0, 4, latent.size), pool, rng)
    assert s.mean() == pytest.approx(0.5, abs=0.005) and s.std() == pytest.approx(0.1, abs=0.005)
    edge = model.score(np.ones(1000), np.zeros(1000, dtype=int), pool, rng)
    assert edge.max() == 1.0 and edge.min() >= 0.0 and np.mean(edge == 1.0) > 0.4  # clipped, not resampled


def test_per_annotator_bias_and_noise():
    rng = np.random.default_rng(1)
    model = annotation.AnnotatorModel(noise_sd=0.1, n_annotators=3, bias_sd=0.2, noise_spread=0.5)
    bias, sd = model.draw_pool(rng)
    assert bias.shape == (3,) and np.all((sd >= 0.05) & (sd <= 0.15))
    who = np.repeat(np.arange(3), 20000)
    s = model.score(np.full(who.size, 0.5), who, (bias, sd), rng)
    for a in range(3):
        assert s[who == a].mean() == pytest.approx(np.clip(0.5 + bias[a], 0, 1), abs=0.02)


def test_invalid_annotator_and_campaign_settings(tmp_path, capsys):
    with pytest.raises(HyperParameterError, match="noise_spread = 2.0: must be in") as info:
        annotation.AnnotatorModel(noise_spread=2.0)
    assert info.value.field == "noise_spread"
    with pytest.raises(HyperParameterError, match="methods = 'elo': must be among"):
        annotation.CampaignSettings(methods=("easl", "elo"))
    # the command line names its options
    for option, value, message in (
        ("--noise-spread", "2", "--noise-spread 2.0: must be in [0, 1]"),
        ("--annotators", "0", "--annotators 0: must be at least 1"),
        ("--methods", "easl,elo", "--methods elo: must be among da, ra, trueskill, easl"),
    ):
        assert cli.main(["simulate", "easl", option, value, "--out", str(tmp_path / "out")]) == 1
        assert message in capsys.readouterr().err


def test_political_oracle_is_normalised_from_minus_two_to_two(political_oracle_file):
    oracle = annotation.csv_oracle(political_oracle_file, "label", annotation.POLITICAL_RANGE)
    raw = pd.read_csv(political_oracle_file)
    assert len(oracle.values) == 150
    np.testing.assert_allclose(oracle.values, (raw["label"].to_numpy() + 2) / 4)
    assert oracle.texts[0] == raw["sent"].iloc[0] and oracle.item_ids[0] == "1"


def test_csv_oracle_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("id,oracle\na,0.1\nb,high\n")
    with pytest.raises(EaslError, match=r"o.csv:3: field 'oracle'"):
        annotation.csv_oracle(path)
    path.write_text("id,score\na,0.1\n")
    with pytest.raises(InputError, match="no 'oracle' or 'label' column"):
        annotation.csv_oracle(path)
    path.write_text("id,oracle\na,0.1\nb,0.9\nc,1.5\n")
    with pytest.raises(EaslError, match=r"o.csv:4: .*outside the oracle range"):
        annotation.csv_oracle(path, value_range=(0.0, 1.0))
    got = annotation.csv_oracle(path)  # default range: observed min..max
    np.testing.assert_allclose(got.values, [0.0, 0.8 / 1.4, 1.0])


def test_first_crossing_interpolates():
    x = np.array([100.0, 200.0, 300.0])
    assert annotation.first_crossing(x, np.array([0.5, 0.7, 0.9]), 0.8) == pytest.approx(250.0)
    assert annotation.first_crossing(x, np.array([0.95, 0.97, 0.99]), 0.9) == 100.0
    assert np.isnan(annotation.first_crossing(x, np.array([0.1, 0.2, 0.3]), 0.9))


def test_campaigns_run_through_the_real_engine_with_equal_budgets(tmp_path):
    rng = np.random.default_rng(3)
    oracle = annotation.synthetic_oracle("beta", 30, rng)
    settings = annotation.CampaignSettings(
        hits_per_iteration=4, iterations=3, runs=2, bootstrap=50, heatmap_iterations=(0, 2)
    )
    res = annotation.compare_methods(oracle, settings, annotation.AnnotatorModel(noise_sd=0.1), rng, workdir=tmp_path)
    summ = res["summary"]
    budget = summ.groupby("method")["n_annotations"].max()
    assert budget.nunique() == 1 and budget.iloc[0] == 30 + 2 * 4 * 5  # covering iteration + 2 x 4 HITs
    for method in settings.methods:
        with Project.open(tmp_path / f"{method}-run0.easl", readonly=True) as project:
            assert project.verify()["ok"]
            assert len(project.ratings()) == budget.iloc[0]
            est = project.estimates().set_index("item_id").loc[oracle.item_ids, "estimate"].to_numpy(float)
        np.testing.assert_allclose(est, res["finals"][method])  # the reported estimates are the engine's
    assert (summ["spearman_low"] <= summ["spearman_mean"] + 1e-12).all()
    assert (summ["spearman_high"] >= summ["spearman_mean"] - 1e-12).all()
    final = summ[summ["iteration"] == 2].set_index("method")["spearman_mean"]
    assert (final > 0.6).all()  # 58 low-noise scores of 30 items rank them well
    assert set(res["heatmaps"]) == set(settings.methods) and res["heatmaps"]["da"] == {}
    flat = res["heatmaps"]["easl"][0]
    assert flat.shape == (30, 30) and np.ptp(flat) < 1e-12  # iteration 0: every item has the prior
    assert np.ptp(res["heatmaps"]["easl"][2]) > 0.05


def test_same_seed_same_results(tmp_path):
    def once():
        rng = np.random.default_rng(11)
        oracle = annotation.synthetic_oracle("uniform", 20, rng)
        settings = annotation.CampaignSettings(
            methods=("easl", "da"), hits_per_iteration=2, iterations=2, runs=1, bootstrap=10, heatmap_iterations=()
        )
        return annotation.compare_methods(oracle, settings, annotation.AnnotatorModel(), rng)["curves"]

    pd.testing.assert_frame_equal(once(), once())


def test_cli_writes_the_report(tmp_path):
    out = tmp_path / "easl"
    oracle = tmp_path / "oracle.csv"
    pd.DataFrame(
        {"id": [f"x{i}" for i in range(25)], "text": [f"item {i}" for i in range(25)], "oracle": np.linspace(0, 10, 25)}
    ).to_csv(oracle, index=False)
    assert (
        cli.main(
            [
                "simulate",
                "easl",
                "--oracle",
                str(oracle),
                "--runs",
                "2",
                "--iterations",
                "3",
                "--hits-per-iteration",
                "3",
                "--bootstrap",
                "20",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = (out / "report.md").read_text()
    assert "What the simulation shows about the paper's claims" in report
    assert "--runs 2" in report and "column 'oracle' normalised from 0..10" in report
    for name in ("correlations", "histograms", "match_quality_easl"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
    reach = pd.read_csv(out / "tables" / "annotations_to_target.csv")
    assert reach["method"].tolist() == ["da", "ra", "trueskill", "easl"]
    assert len(pd.read_csv(out / "tables" / "correlation_runs.csv")) == 4 * 2 * 3


def test_cli_reports_a_missing_oracle_file(tmp_path, capsys):
    assert cli.main(["simulate", "easl", "--oracle", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "nope.csv does not exist" in err and "political_150_gold.csv, is not shipped" in err


def test_political_file_name_selects_the_papers_range(tmp_path, capsys):
    """``--oracle .../political_150_gold.csv`` maps -2..2 to 0..1 even when the file's labels do not span it."""
    path = tmp_path / annotation.POLITICAL_ORACLE_FILE
    pd.DataFrame(
        {"id": range(1, 13), "sent": [f"statement {i}" for i in range(12)], "label": np.linspace(-1.0, 1.0, 12)}
    ).to_csv(path, index=False)
    out = tmp_path / "o"
    assert (
        cli.main(
            [
                "simulate",
                "easl",
                "--oracle",
                str(path),
                "--methods",
                "easl",
                "--runs",
                "1",
                "--iterations",
                "2",
                "--hits-per-iteration",
                "2",
                "--bootstrap",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "normalised from -2..2 to 0..1" in (out / "report.md").read_text()


def test_default_oracle_is_generated_and_needs_no_data_file(tmp_path):
    out = tmp_path / "o"
    assert (
        cli.main(
            [
                "simulate",
                "easl",
                "--items",
                "20",
                "--methods",
                "easl,da",
                "--runs",
                "1",
                "--iterations",
                "2",
                "--hits-per-iteration",
                "2",
                "--bootstrap",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "Beta(2, 2)" in (out / "report.md").read_text()


# ---------------------------------------------------------------------------------------------------
# --annotator-model: the annotator-aware study


def test_annotator_model_study_writes_csv_png_and_markdown(tmp_path, capsys):
    out = tmp_path / "study"
    assert (
        cli.main(
            [
                "simulate",
                "easl",
                "--annotator-model",
                "M1,M4",
                "--runs",
                "2",
                "--max-per-item",
                "5",
                "--items",
                "60",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "M4 aware:" in printed and "annotations saved vs DA" in printed
    for name in ("curves", "budget", "coverage", "stopping", "flags"):
        assert (out / "tables" / f"{name}.csv").exists(), name
    for name in ("spearman_curves", "kendall_curves"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "Where aware gains nothing" in report and "--annotator-model M1,M4" in report
    # the check for the default method (60 items put aware's and DA's budgets on different
    # grids, so there is no common budget: said, not a crash)
    assert "aware vs da per budget" in report and "no verdict" in report
    budget = pd.read_csv(out / "tables" / "budget.csv")
    assert set(budget["method"]) == {"da", "da-z", "easl", "aware"} and set(budget["model"]) == {"M1", "M4"}
    curves = pd.read_csv(out / "tables" / "curves.csv")
    assert {"spearman", "kendall", "per_item", "seed"} <= set(curves.columns)


def test_annotator_model_study_with_an_oracle_file_and_method_subset(tmp_path):
    oracle = tmp_path / "oracle.csv"
    pd.DataFrame({"id": range(40), "label": np.linspace(-2, 2, 40)}).to_csv(oracle, index=False)
    out = tmp_path / "s"
    assert (
        cli.main(
            [
                "simulate",
                "easl",
                "--annotator-model",
                "M2",
                "--methods",
                "da,aware",
                "--runs",
                "2",
                "--max-per-item",
                "4",
                "--oracle",
                str(oracle),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    budget = pd.read_csv(out / "tables" / "budget.csv")
    assert list(budget["method"]) == ["da", "aware"]


def test_annotator_model_study_refuses_bad_names(tmp_path, capsys):
    assert cli.main(["simulate", "easl", "--annotator-model", "M9", "--out", str(tmp_path / "x")]) == 1
    assert "M9" in capsys.readouterr().err
    assert (
        cli.main(["simulate", "easl", "--annotator-model", "M1", "--methods", "ra,da", "--out", str(tmp_path / "x")])
        == 1
    )
    assert "--methods ra" in capsys.readouterr().err
    assert (
        cli.main(["simulate", "easl", "--annotator-model", "M1", "--methods", "aware", "--out", str(tmp_path / "x")])
        == 1
    )


def test_no_gain_models_reads_the_interval():
    from easl_toolkit.core.simulate.aware_study import no_gain_models

    budget = pd.DataFrame(
        {
            "model": ["M1", "M1", "M2", "M2"],
            "method": ["da", "aware", "da", "aware"],
            "saved_vs_da_ci": [None, "[-18, +13]", None, "[+4, +26]"],
        }
    )
    assert no_gain_models(budget) == ["M1"]
