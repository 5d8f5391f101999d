"""The per-budget check of aware against DA (core/simulate/paired_budgets.py: the condition for the default method)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.simulate import paired_budgets as pb
from easl_toolkit.core.simulate.aware_study import RunSettings, StudyDesign, run_study
from easl_toolkit.core.simulate.report import Report


def _curves(shift: float, *, n_seeds: int = 12, noise: float = 0.01, seed: int = 0) -> pd.DataFrame:
    """Two models, budgets 0.5..6 per item: DA's curve plus seed noise; aware = DA + ``shift`` + noise."""
    rng = np.random.default_rng(seed)
    grid = np.arange(1, 13) / 2
    da = 0.9 - 0.3 / grid + rng.normal(0, 0.02, (2, n_seeds, 1))
    aware = da + shift + rng.normal(0, noise, da.shape[:2] + grid.shape)
    model, seeds, per_item = np.meshgrid(["M1", "M2"], np.arange(n_seeds), grid, indexing="ij")
    frames = [
        pd.DataFrame(
            {"model": model.ravel(), "method": name, "seed": seeds.ravel(), "per_item": per_item.ravel()}
        ).assign(spearman=values.ravel(), kendall=values.ravel() - 0.1)
        for name, values in (("da", np.broadcast_to(da, aware.shape)), ("aware", aware))
    ]
    return pd.concat(frames, ignore_index=True)


def test_the_interval_is_the_paired_t_interval_over_seeds():
    curves = _curves(0.004)
    table = pb.paired_by_budget(curves)
    assert set(table["per_item"]) == {3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0}  # below 3 per item left out
    row = table[(table["model"] == "M2") & (table["per_item"] == 4.0) & (table["measure"] == "spearman")].iloc[0]
    a = curves[(curves["model"] == "M2") & (curves["per_item"] == 4.0)].pivot(
        index="seed", columns="method", values="spearman"
    )
    d = (a["aware"] - a["da"]).to_numpy()
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    assert row["seeds"] == 12
    assert row["difference"] == pytest.approx(d.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    assert row["aware"] == pytest.approx(a["aware"].mean()) and row["da"] == pytest.approx(a["da"].mean())


def test_worse_better_and_within_noise():
    assert not pb.never_worse(pb.paired_by_budget(_curves(-0.02)))
    assert set(pb.paired_by_budget(_curves(-0.02))["verdict"]) == {"worse"}
    assert set(pb.paired_by_budget(_curves(0.02))["verdict"]) == {"better"}
    tied = pb.paired_by_budget(_curves(0.0, noise=0.0))
    assert set(tied["verdict"]) == {"within noise"} and pb.never_worse(tied)
    worst = pb.worst_per_model(pb.paired_by_budget(_curves(-0.02)))
    assert list(worst["budgets_worse"]) == [7, 7, 7, 7] and list(worst["budgets_better"]) == [0, 0, 0, 0]


@settings(max_examples=10, deadline=None)
@given(st.floats(-0.05, 0.05), st.integers(0, 10_000))
def test_a_constant_shift_moves_the_difference_and_not_its_spread(shift, seed):
    base = _curves(0.0, seed=seed)
    moved = base.copy()
    aware = moved["method"] == "aware"
    moved.loc[aware, ["spearman", "kendall"]] += shift
    t0, t1 = pb.paired_by_budget(base), pb.paired_by_budget(moved)
    np.testing.assert_allclose(t1["difference"] - t0["difference"], shift, atol=1e-12)
    np.testing.assert_allclose(t1["se"], t0["se"], atol=1e-12)
    swapped = pb.paired_by_budget(base, method="da", reference="aware")
    np.testing.assert_allclose(swapped["difference"], -t0["difference"], atol=1e-12)


def test_bad_curves_are_one_clear_error():
    curves = _curves(0.0)
    with pytest.raises(EaslError, match="no column 'kendall'"):
        pb.paired_by_budget(curves.drop(columns="kendall"))
    with pytest.raises(EaslError, match="no runs of the method 'aware'"):
        pb.paired_by_budget(curves[curves["method"] == "da"])
    with pytest.raises(EaslError, match="twice"):
        pb.paired_by_budget(pd.concat([curves, curves]))
    with pytest.raises(EaslError, match="no budget of 3 scores per item"):
        pb.paired_by_budget(curves[curves["per_item"] < 3])


def test_a_real_study_its_report_section_and_the_script(tmp_path, capsys):
    result = run_study(StudyDesign(models=("M1",), methods=("da", "aware"), n_seeds=3), RunSettings(max_per_item=4.0))
    rep = Report(tmp_path / "study", "study", "test")
    rep.table(result["curves"], "curves", show=False)
    verdict = pb.report_section(rep, result["curves"])
    rep.write()
    text = (tmp_path / "study" / "report.md").read_text()
    assert "aware vs da per budget" in text and ("never worse" in text) == verdict
    table = pd.read_csv(tmp_path / "study" / "tables" / "vs_da_per_budget.csv")
    assert set(table["per_item"]) == {3.0, 3.5, 4.0} and set(table["seeds"]) == {3}
    status = pb.main([str(tmp_path / "study")])
    out = capsys.readouterr().out
    assert status == (0 if verdict else 1)
    assert "M1     spearman worst at" in out and "3 paired seeds" in out
    with pytest.raises(EaslError, match="twice"):  # the same seeds pooled twice
        pb.main([f"{tmp_path / 'study'},{tmp_path / 'study'}"])
    with pytest.raises(EaslError, match="no such file"):
        pb.main([str(tmp_path / "missing")])
