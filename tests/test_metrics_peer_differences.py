"""One test per cause of the differences from the peers, each failing on the code before the fix.

Data: Gwet's (2014) 12 subjects x 4 raters (irrCAC ``raw_4raters``); expected numbers are irrCAC's and
krippendorff's on these data (frozen in ``tests/peers/irrcac_raw4raters.json``; see ``tests/peers/README.md``).
"""

import json

import numpy as np
import pandas as pd
import pytest

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.output_schema import SCHEMA_VERSION
from easl_toolkit.tui.cli import main

nan = np.nan
RAW4 = np.array(
    [
        [1, 1, nan, 1],
        [2, 2, 3, 2],
        [3, 3, 3, 3],
        [3, 3, 3, 3],
        [2, 2, 2, 2],
        [1, 2, 3, 4],
        [4, 4, 4, 4],
        [1, 1, 2, 1],
        [2, 2, 2, 2],
        [nan, 5, 5, 5],
        [nan, nan, 1, 1],
        [nan, nan, 3, nan],
    ]
)
RATERS = ["Rater1", "Rater2", "Rater3", "Rater4"]


def wide_csv(tmp_path):
    df = pd.DataFrame(RAW4, columns=RATERS)
    df["item"] = [f"u{i + 1}" for i in range(12)]
    df["model"] = np.arange(12) % 5 + 1.0
    path = tmp_path / "raw4.csv"
    df.to_csv(path, index=False)
    return path


def long_csv(tmp_path, shuffle: bool):
    rows = [
        {"item": f"u{i + 1}", "annotator": RATERS[j], "score": RAW4[i, j]}
        for i in range(12)
        for j in range(4)
        if np.isfinite(RAW4[i, j])
    ]
    rows += [{"item": f"u{i + 1}", "annotator": "model", "score": float(i % 5 + 1)} for i in range(12)]
    df = pd.DataFrame(rows)
    if shuffle:
        df = df.sample(frac=1.0, random_state=3)
    path = tmp_path / f"raw4-long-{shuffle}.csv"
    df.to_csv(path, index=False)
    return path


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cause1_all_raters_coefficients_keep_responses_without_the_first_rating(tmp_path, capsys):
    """Before: responses without Rater1's score were dropped before AC1 and alpha (AC1 0.7287, alpha 0.7383)."""
    d = run_json(
        capsys,
        ["evaluate", str(wide_csv(tmp_path)), "--human", *RATERS, "--system", "model", "--scale", "1", "5", "--json"],
    )
    allr = d["all_raters"]
    assert allr["N"] == 12 and allr["N_pairable"] == 11 and allr["N_raters"] == 4
    assert allr["gwet_ac1"] == pytest.approx(0.775444068126995, abs=1e-9)  # irrCAC
    assert allr["krippendorff_alpha_interval"] == pytest.approx(0.8491071428571428, abs=1e-9)  # krippendorff
    assert allr["conger_kappa"] == pytest.approx(0.762817441303306, abs=1e-9)  # irrCAC
    assert d["n_responses"] == 9  # the RSMTool comparisons still need Rater1 and the system


@pytest.mark.parametrize("shuffle", [False, True])
def test_cause2_long_form_keeps_rater_ids(tmp_path, capsys, shuffle):
    """Before: ratings went into slots by file order (Conger 0.762738 in order, 0.762670 shuffled)."""
    d = run_json(
        capsys,
        [
            "evaluate",
            str(long_csv(tmp_path, shuffle)),
            "--long",
            "item,annotator,score",
            "--system",
            "model",
            "--scale",
            "1",
            "5",
            "--json",
        ],
    )
    assert sorted(d["human_columns"]) == RATERS
    assert d["human_columns"] == ["Rater3", "Rater4", "Rater2", "Rater1"]  # most ratings first (12, 11, 10, 9)
    assert d["all_raters"]["conger_kappa"] == pytest.approx(0.762817441303306, abs=1e-9)
    assert d["systems"]["model"]["true_score"]["N_raters"] == 4
    assert d["human_human"]["raters"] == ["Rater3", "Rater4"]


def test_cause3_analytic_intervals_follow_irrcac(tmp_path):
    """Before: z quantile and no cap. irrCAC: quadratic Scott's pi of Rater2 and Rater4, 10 subjects,
    0.87012987012987, se 0.141488978420205, interval (0.550059564147698, 1)."""
    ev = M.evaluate(RAW4[:, 1:2], {"Rater4": RAW4[:, 3]}, options=EvaluationOptions(scale=M.Scale(1, 5)))
    fig = ev.systems["Rater4"].observed["fleiss_kappa_quadratic"]
    assert fig.value == pytest.approx(0.87012987012987, abs=1e-9)
    assert fig.analytic.se == pytest.approx(0.141488978420205, abs=1e-9)
    assert (fig.analytic.low, fig.analytic.high) == pytest.approx((0.550059564147698, 1.0), abs=1e-6)
    assert "Student t" in fig.analytic.method


def test_one_name_per_coefficient_and_n_beside_every_block(tmp_path, capsys):
    d = run_json(
        capsys,
        [
            "evaluate",
            str(wide_csv(tmp_path)),
            "--human",
            *RATERS,
            "--system",
            "model",
            "--scale",
            "1",
            "5",
            "--bootstrap",
            "20",
            "--json",
        ],
    )
    assert d["schema_version"] == SCHEMA_VERSION
    observed = d["systems"]["model"]["observed"]
    pair_names = {k for k in observed if not k.endswith("_reason")}
    all_names = {k for k in d["all_raters"] if not k.endswith("_reason")}
    for name in ("conger_kappa", "fleiss_kappa_quadratic", "gwet_ac1", "krippendorff_alpha_interval"):
        assert name in pair_names and name in all_names
    assert not {"scott_pi", "scott_pi_quadratic", "kappa_linear"} & (pair_names | all_names)
    assert observed["kappa"] == observed["conger_kappa"] and "kappa" not in all_names  # RSMTool's name, pairs only
    for block in (
        d["human_human"],
        d["all_raters"],
        d["systems"]["model"]["observed"],
        d["systems"]["model"]["true_score"],
        d["systems"]["model"]["degradation"],
    ):
        assert "N" in block
    assert set(d["human_human"]["ci"]) >= {"corr", "conger_kappa"}  # human-human intervals sit in the block
    assert d["systems"]["model"]["analytic"]["corr"]["method"].startswith("Fisher z")
