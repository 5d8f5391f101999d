"""The evaluate pipeline: the JSON object of the issue, agreement with the library functions, policy, bootstrap."""

import json

import numpy as np
import pytest

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.bootstrap import percentile_interval, resample_chunks
from easl_toolkit.core.metrics.notes import quiet
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.output_schema import RSMTOOL_NAMES, SCHEMA_VERSION
from easl_toolkit.core.metrics.registry import OBSERVED_KEYS, TRUE_SCORE_KEYS
from easl_toolkit.core.metrics.report import to_json_text, write_output


def make_data(seed=0, n=300, p_double=0.5):
    rng = np.random.default_rng(seed)
    t = rng.normal(3.5, 1.0, n)
    h1 = np.clip(np.round(t + rng.normal(0, 0.6, n)), 1, 6)
    h2 = np.where(rng.random(n) < p_double, np.clip(np.round(t + rng.normal(0, 0.6, n)), 1, 6), np.nan)
    m = t + rng.normal(0, 0.5, n)
    g = rng.choice(["a", "b", "c"], n)
    return np.column_stack([h1, h2]), m, g


@pytest.fixture(scope="module")
def result():
    h, m, g = make_data()
    return (
        h,
        m,
        g,
        M.evaluate(
            h,
            {"sys": m},
            human_names=["h1", "h2"],
            groups=g,
            group_name="L1",
            options=EvaluationOptions(scale=M.Scale(1, 6), n_bootstrap=40, seed=5),
        ),
    )


def test_json_object_shape(result):
    *_, ev = result
    d = json.loads(to_json_text(ev.to_json()))
    for key in (
        "n_responses",
        "n_dropped",
        "dropped",
        "scale",
        "human_human",
        "systems",
        "subgroups",
        "fairness",
        "notes",
    ):
        assert key in d
    assert d["scale"]["min"] == 1 and d["scale"]["max"] == 6
    sysd = d["systems"]["sys"]
    rsmtool = list(RSMTOOL_NAMES.values())
    assert [k for k in sysd["observed"] if not k.endswith("_reason")] == list(OBSERVED_KEYS) + rsmtool
    assert d["schema_version"] == SCHEMA_VERSION
    assert d["human_human"]["raters"] == ["h1", "h2"]
    assert [k for k in d["human_human"] if k in OBSERVED_KEYS] == list(OBSERVED_KEYS)
    assert set(d["human_human"]["ci"]) >= {"corr", "gwet_ac1"} and "N" in d["all_raters"]
    assert [k for k in sysd["true_score"] if not k.endswith("_reason")] == list(TRUE_SCORE_KEYS)
    for key in ("degradation", "disattenuated_corr", "ci"):
        assert key in sysd
    assert set(sysd["ci"]) >= {"corr", "prmse", "gwet_ac1", "krippendorff_alpha_interval", "disattenuated_corr"}
    assert d["subgroups"]["L1"].keys() == {"a", "b", "c"}
    assert set(d["fairness"]["L1"]["sys"]) >= {"osa", "osd", "csd"}


def test_values_match_library_functions(result):
    h, m, _, ev = result
    obs = ev.to_json()["systems"]["sys"]["observed"]
    h1 = h[:, 0]
    mr = np.clip(np.round(m), 1, 6)
    pair = np.column_stack([h1, mr])
    cats = np.arange(1, 7)
    assert obs["N"] == h.shape[0]
    assert obs["corr"] == pytest.approx(M.pearson_r(h1, m), abs=1e-12)
    assert obs["spearman"] == pytest.approx(M.spearman_rho(h1, m), abs=1e-12)
    assert obs["kendall_tau_b"] == pytest.approx(M.kendall_tau_b(h1, m), abs=1e-12)
    assert obs["qwk"] == pytest.approx(M.quadratic_weighted_kappa(h1, m), abs=1e-12)
    assert obs["smd"] == pytest.approx(M.standardized_mean_difference(h1, m), abs=1e-12)
    assert obs["r2"] == pytest.approx(M.r2_score(h1, m), abs=1e-12)
    assert obs["mse"] == pytest.approx(M.mean_squared_error(h1, m), abs=1e-12)
    assert obs["h_sd"] == pytest.approx(np.std(h1, ddof=1), abs=1e-12)
    assert obs["exact_agr"] == pytest.approx(M.exact_agreement(h1, mr))
    assert obs["adj_agr"] == pytest.approx(M.adjacent_agreement(h1, mr))
    for w, suffix in (("identity", ""), ("linear", "_linear"), ("quadratic", "_quadratic")):
        assert obs["conger_kappa" + suffix] == pytest.approx(M.cohen_kappa(h1, mr, weights=w), abs=1e-12)
        ac = "gwet_ac1" if w == "identity" else "gwet_ac2" + suffix
        assert obs[ac] == pytest.approx(M.gwet_ac(pair, cats, weights=w), abs=1e-12)
        assert obs["bp" + suffix] == pytest.approx(M.brennan_prediger(pair, cats, weights=w), abs=1e-12)
        assert obs["fleiss_kappa" + suffix] == pytest.approx(M.fleiss_kappa(pair, cats, weights=w), abs=1e-12)
    for level in ("nominal", "ordinal", "interval"):
        assert obs["krippendorff_alpha_" + level] == pytest.approx(M.krippendorff_alpha(pair, level=level), abs=1e-12)
    ts = ev.to_json()["systems"]["sys"]["true_score"]
    assert ts["prmse"] == pytest.approx(M.prmse(m, h), abs=1e-12)
    assert ts["rater_error_variance"] == pytest.approx(M.variance_of_errors(h), abs=1e-12)
    assert ts["N_multiple"] == int(np.isfinite(h[:, 1]).sum())
    both = np.isfinite(h[:, 1])
    hh = ev.to_json()["human_human"]
    assert hh["N"] == both.sum()
    assert hh["corr"] == pytest.approx(M.pearson_r(h[both, 0], h[both, 1]), abs=1e-12)
    assert hh["smd"] == pytest.approx(
        M.standardized_mean_difference(h[both, 0], h[both, 1], method="pooled"), abs=1e-12
    )
    deg = ev.to_json()["systems"]["sys"]["degradation"]
    assert deg["corr"] == pytest.approx(obs["corr"] - hh["corr"], abs=1e-12)
    assert ev.to_json()["systems"]["sys"]["disattenuated_corr"] == pytest.approx(obs["corr"] / np.sqrt(hh["corr"]))


def test_subgroup_dsm_uses_whole_set(result):
    h, m, g, ev = result
    obs = ev.to_json()["systems"]["sys"]["observed"]
    sel = g == "b"
    want = M.difference_of_standardized_means(
        h[sel, 0],
        m[sel],
        population_y_true_mean=obs["h_mean"],
        population_y_pred_mean=obs["sys_mean"],
        population_y_true_sd=obs["h_sd"],
        population_y_pred_sd=obs["sys_sd"],
    )
    assert ev.to_json()["subgroups"]["L1"]["b"]["sys"]["dsm"] == pytest.approx(want, abs=1e-12)
    assert ev.to_json()["subgroups"]["L1"]["b"]["sys"]["N"] == sel.sum()


def test_bootstrap_interval_equals_recomputation_on_the_same_resamples(result):
    h, m, _, ev = result
    rng = np.random.default_rng(5)
    corr, prmse_vals, ac1 = [], [], []
    cats = np.arange(1, 7)
    for index, _ in resample_chunks(h.shape[0], 40, rng):
        for idx in index:
            corr.append(quiet(M.pearson_r, h[idx, 0], m[idx]))
            prmse_vals.append(quiet(M.prmse, m[idx], h[idx]))
            ac1.append(quiet(M.gwet_ac, np.column_stack([h[idx, 0], np.clip(np.round(m[idx]), 1, 6)]), cats))
    ci = ev.to_json()["systems"]["sys"]["ci"]
    assert ci["corr"] == pytest.approx(list(percentile_interval(np.array(corr))), abs=1e-10)
    assert ci["prmse"] == pytest.approx(list(percentile_interval(np.array(prmse_vals))), abs=1e-10)
    assert ci["gwet_ac1"] == pytest.approx(list(percentile_interval(np.array(ac1))), abs=1e-10)


def test_bootstrap_is_seeded():
    h, m, _ = make_data(1, 120)
    a = M.evaluate(h, {"s": m}, options=EvaluationOptions(scale=M.Scale(1, 6), n_bootstrap=15, seed=3)).to_json()[
        "systems"
    ]["s"]["ci"]
    b = M.evaluate(h, {"s": m}, options=EvaluationOptions(scale=M.Scale(1, 6), n_bootstrap=15, seed=3)).to_json()[
        "systems"
    ]["s"]["ci"]
    c = M.evaluate(h, {"s": m}, options=EvaluationOptions(scale=M.Scale(1, 6), n_bootstrap=15, seed=4)).to_json()[
        "systems"
    ]["s"]["ci"]
    assert a == b and a != c


def test_zero_policy_counts():
    h = np.array([[0, 2], [2, 0], [3, 3], [np.nan, 2], [2, 2], [4, 3]], dtype=float)
    m = np.array([1, 2, 3, 4, np.nan, 3.5])
    ev = M.evaluate(h, {"s": m}, options=EvaluationOptions(scale=M.Scale(0, 4), exclude_zeros=True))
    d = ev.to_json()
    assert d["n_responses"] == 3 and d["n_dropped"] == 3
    assert d["dropped"] == {
        "first human score missing or non-numeric": 1,
        "first human score is 0 (zeros excluded)": 1,
        "system score missing or non-numeric": 1,
    }
    # the true-score metrics keep every rated response with a system score: the rows whose
    # first score is 0 or missing count as single-scored; the row without a system score does not count
    ts = d["systems"]["s"]["true_score"]
    assert (ts["N"], ts["N_single"], ts["N_multiple"]) == (5, 3, 2)
    assert any("set to missing" in n for n in d["notes"])


def test_inferred_scale_is_noted():
    h, m, _ = make_data(2, 50)
    ev = M.evaluate(h, {"s": m})
    assert any("no scale given" in n for n in ev.to_json()["notes"])


def test_multi_rater_human_agreement():
    rng = np.random.default_rng(0)
    t = rng.integers(1, 5, 80)
    h = np.column_stack([t, t, np.where(rng.random(80) < 0.5, t, np.nan), rng.integers(1, 5, 80)]).astype(float)
    ev = M.evaluate(h, {"s": t + rng.normal(0, 0.3, 80)}, options=EvaluationOptions(scale=M.Scale(1, 4)))
    allr = ev.to_json()["all_raters"]
    assert allr["N"] == 80 and allr["N_raters"] == 4 and allr["raters"] == ["h1", "h2", "h3", "h4"]
    assert allr["gwet_ac1"] == pytest.approx(M.gwet_ac(h, np.arange(1, 5)), abs=1e-12)
    assert allr["conger_kappa_quadratic"] == pytest.approx(
        M.conger_kappa(h, np.arange(1, 5), weights="quadratic"), abs=1e-12
    )
    assert allr["krippendorff_alpha_ordinal"] == pytest.approx(M.krippendorff_alpha(h, level="ordinal"), abs=1e-12)


def test_write_output_files(tmp_path, result):
    *_, ev = result
    out = tmp_path / "report"
    write_output(ev, out, source="data.csv")
    names = {p.name for p in out.iterdir()}
    assert {
        "eval.csv",
        "eval_short.csv",
        "consistency.csv",
        "true_score_eval.csv",
        "eval_by_L1.csv",
        "fairness_L1.csv",
        "report.md",
        "evaluation.json",
        "prmse.png",
        "scatter_sys.png",
        "confusion_sys.png",
        "ci.csv",
        "degradation.csv",
    } <= names
    assert (out / "prmse.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text()
    assert "![PRMSE with bootstrap interval](prmse.png)" in md
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".easl-evaluate-")]


def test_observed_metrics_equals_pipeline(result):
    h, m, _, ev = result
    got = M.observed_metrics(h[:, 0], m, categories=np.arange(1, 7))
    obs = ev.to_json()["systems"]["sys"]["observed"]
    assert list(got) == list(OBSERVED_KEYS)
    for k in OBSERVED_KEYS:
        assert got[k] == pytest.approx(obs[k], abs=1e-12), k
    with pytest.warns(M.UndefinedMetricWarning, match="no score categories"):
        fast = M.observed_metrics(h[:, 0], m, ranks=False)
    assert "spearman" not in fast and fast["corr"] == pytest.approx(obs["corr"], abs=1e-12)
    assert np.isnan(fast["gwet_ac1"]) and np.isnan(fast["conger_kappa"])


def test_subgroup_intervals_equal_recomputation(result):
    h, m, g, ev = result
    corr, dsm = [], []
    for index, _ in resample_chunks(h.shape[0], 40, np.random.default_rng(5)):
        for idx in index:
            hb, mb, gb = h[idx, 0], m[idx], g[idx]
            sel = gb == "b"
            corr.append(quiet(M.pearson_r, hb[sel], mb[sel]))
            dsm.append(
                quiet(
                    M.difference_of_standardized_means,
                    hb[sel],
                    mb[sel],
                    population_y_true_mean=hb.mean(),
                    population_y_pred_mean=mb.mean(),
                    population_y_true_sd=hb.std(ddof=1),
                    population_y_pred_sd=mb.std(ddof=1),
                )
            )
    ci = ev.to_json()["subgroups"]["L1"]["b"]["sys"]["ci"]
    assert ci["corr"] == pytest.approx(list(percentile_interval(np.array(corr))), abs=1e-10)
    assert ci["dsm"] == pytest.approx(list(percentile_interval(np.array(dsm))), abs=1e-10)


def test_tau_c_and_all_raters_intervals_equal_recomputation():
    """The resampled tau-c (tie counts from value ids) and all-raters coefficients (sums by rating pattern) equal
    the library functions on the same resamples."""
    rng = np.random.default_rng(8)
    n = 150
    t = rng.normal(3, 1, n)
    h = np.clip(np.round(t[:, None] + rng.normal(0, 0.7, (n, 3))), 1, 5)
    h[rng.random((n, 3)) < 0.2] = np.nan
    h[:, 0] = np.where(np.isnan(h[:, 0]), 3.0, h[:, 0])
    m = np.round(t + rng.normal(0, 0.5, n), 1)
    ev = M.evaluate(h, {"s": m}, options=EvaluationOptions(scale=M.Scale(1, 5), n_bootstrap=30, seed=2))
    tau_c, ac1, conger = [], [], []
    for index, _ in resample_chunks(n, 30, np.random.default_rng(2)):
        for idx in index:
            tau_c.append(quiet(M.kendall_tau_c, h[idx, 0], m[idx]))
            ac1.append(quiet(M.gwet_ac, h[idx], np.arange(1, 6)))
            conger.append(quiet(M.conger_kappa, h[idx], np.arange(1, 6), weights="quadratic"))
    d = ev.to_json()
    assert d["systems"]["s"]["ci"]["kendall_tau_c"] == pytest.approx(
        list(percentile_interval(np.array(tau_c))), abs=1e-10
    )
    assert d["all_raters"]["ci"]["gwet_ac1"] == pytest.approx(list(percentile_interval(np.array(ac1))), abs=1e-10)
    assert d["all_raters"]["ci"]["conger_kappa_quadratic"] == pytest.approx(
        list(percentile_interval(np.array(conger))), abs=1e-10
    )


def test_prmse_plot_draws_an_interval_that_does_not_contain_its_estimate(tmp_path):
    """A percentile interval of PRMSE can lie beside the estimate (a skewed bootstrap distribution): the figure is
    drawn, not refused with a negative error bar."""
    from easl_toolkit.core.metrics.report import prmse_plot

    path = prmse_plot({"a": 0.62, "b": 0.40, "c": None}, {"a": (0.65, 0.80), "b": (0.30, 0.45)}, tmp_path / "p.png")
    assert path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_md_has_every_terminal_section_with_intervals_and_integer_counts(tmp_path, result):
    from easl_toolkit.core.metrics.sections import sections

    _, _, _, ev = result
    write_output(ev, tmp_path / "out", source="scores.csv")
    text = (tmp_path / "out" / "report.md").read_text()
    for section in sections(ev):
        assert f"### {section.title}" in text or f"## {section.title}" in text
    for title in ("Agreement among all 2 human raters", "Degradation", "By L1", "Fairness by L1", "True scores"):
        assert title in text
    n = int(ev.systems["sys"].observed.value("N"))
    assert f"| N | responses | {n} |   |" in text and ".000 |" not in text.split("## Figures")[0].split("| N |")[1][:20]
    corr = ev.systems["sys"].observed["corr"].ci
    assert f"[{corr.low:.4f}, {corr.high:.4f}]" in text  # every bootstrap interval, not PRMSE's alone
    assert "## What each figure means" in text and "Pearson" in text


def test_human_human_column_shows_no_system_mean_and_counts_have_no_interval(result):
    from easl_toolkit.core.metrics.sections import observed

    _, _, _, ev = result
    rows = {row[0]: row for section in observed(ev) for row in section.rows}
    columns = observed(ev)[0].columns
    hh = columns.index("human-human")
    assert rows["sys_mean"][hh] == "" and rows["sys_sd"][hh] == "" and rows["h_mean"][hh] != ""
    assert rows["N"][columns.index("sys interval")] == "" and rows["N"][columns.index("sys")].isdigit()
    assert rows["corr"][columns.index("sys interval")].startswith("[")


def test_every_observed_and_true_score_figure_is_grouped_and_explained():
    from easl_toolkit.core.metrics.glossary import OBSERVED_GROUPS, TRUE_SCORE_GROUP, meaning

    grouped = [k for g in OBSERVED_GROUPS for k in g.keys]
    assert sorted(grouped) == sorted(OBSERVED_KEYS) and len(set(grouped)) == len(grouped)
    for key in (*OBSERVED_KEYS, *TRUE_SCORE_GROUP.keys, "krippendorff_alpha_ratio", "gwet_ac2_ordinal", "dsm"):
        assert meaning(key), key


def test_evaluation_guide_explains_every_figure_of_the_glossary():
    from pathlib import Path

    from easl_toolkit.core.metrics.glossary import MEANING

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "evaluation.md").read_text()
    section = guide.split("## Reading the figures")[1].split("\n## ")[0]
    assert [k for k in MEANING if f"`{k}`" not in section] == []


def test_p_values_below_the_printed_precision_read_as_less_than():
    from easl_toolkit.core.metrics.sections import all_raters

    h, m, _ = make_data(n=400, p_double=1.0)
    ev = M.evaluate(h, {"sys": m}, human_names=["h1", "h2"], options=EvaluationOptions(scale=M.Scale(1, 6)))
    section = all_raters(ev)
    p = section.columns.index("p")
    assert {row[p] for row in section.rows if row[p]} == {"< 0.0001"}


def test_disattenuated_interval_is_cut_to_the_range_of_a_correlation():
    rng = np.random.default_rng(3)
    n = 60
    t = rng.normal(0, 1, n)
    h = np.column_stack([t + rng.normal(0, 1.5, n), t + rng.normal(0, 1.5, n)])  # unreliable humans: r_hh ~ 0.3
    ev = M.evaluate(h, {"sys": t}, options=EvaluationOptions(scale=M.Scale(-6, 6), n_bootstrap=200, seed=1))
    dc = ev.systems["sys"].disattenuated_corr
    samples_above = dc.value > 0.9
    assert samples_above and dc.ci is not None and -1.0 <= dc.ci.low <= dc.ci.high <= 1.0


def test_system_scores_outside_the_scale_are_counted_in_a_note():
    h, m, _ = make_data(n=50)
    m = m.copy()
    m[:3] = [0.0, 7.5, 9.0]
    ev = M.evaluate(h, {"sys": m}, human_names=["h1", "h2"], options=EvaluationOptions(scale=M.Scale(1, 6)))
    clipped = [n for n in ev.notes if "outside the scale" in n]
    assert len(clipped) == 1 and clipped[0].startswith(f"sys: {int(((m < 1) | (m > 6)).sum())} of 50 system scores")
