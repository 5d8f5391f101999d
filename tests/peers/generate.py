"""Freeze the peers' numbers for the peer-comparison suite (``tests/test_metrics_peers.py``).

Run once, in a scratch virtual environment with the peers installed (never at test time):

    python -m venv /tmp/peer-venv
    /tmp/peer-venv/bin/pip install irrCAC krippendorff statsmodels scikit-learn scipy rsmtool "coverage>=7.4"
    /tmp/peer-venv/bin/python tests/peers/generate.py

It writes ``tests/peers/data/`` (irrCAC's ten public datasets as CSV, and six generated sets) and
``tests/peers/expected.json`` (every peer number, with the peer versions). See ``tests/peers/README.md``.
"""

from __future__ import annotations

import json
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
WEIGHTS = ("identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar")
COEFS = ("gwet", "bp", "fleiss", "conger", "krippendorff")
#: (raters, categories, share missing, responses) of the generated sets
GENERATED = {
    "gen2x3": (2, 3, 0.0, 12),
    "gen3x5": (3, 5, 0.1, 60),
    "gen4x4": (4, 4, 0.2, 200),
    "gen5x7": (5, 7, 0.3, 500),
    "gen6x6": (6, 6, 0.15, 1000),
    "gen2x5": (2, 5, 0.0, 5000),
}


def irrcac_raw(ratings: pd.DataFrame, cats: list, weights=WEIGHTS, coefs=COEFS) -> dict:
    from irrCAC.raw import CAC

    out: dict = {}
    for w in weights:
        try:
            cac = CAC(ratings, weights=w, categories=cats, digits=15)
        except ValueError as exc:  # ratio weights with a category 0
            out[w] = {"error": str(exc)}
            continue
        out[w] = {}
        for c in coefs:
            est = getattr(cac, c)()["est"]
            out[w][c] = {
                "value": float(est["coefficient_value"]),
                "se": float(est["se"]),
                "ci": [float(x) for x in est["confidence_interval"]],
                "p_value": float(est["p_value"]),
            }
    return out


def irrcac_table(table: pd.DataFrame) -> dict:
    from irrCAC.table import CAC

    out: dict = {}
    for w in ("identity", "quadratic"):
        cac = CAC(table, weights=w, digits=15)
        out[w] = {}
        for c in ("cohen", "scott", "gwet", "bp", "krippendorff"):
            est = getattr(cac, c)()["est"]
            out[w][c] = {
                "value": float(est["coefficient_value"]),
                "se": float(est["se"]),
                "ci": [float(x) for x in est["confidence_interval"]],
            }
    return out


def coded(frame: pd.DataFrame) -> tuple[pd.DataFrame, list, list]:
    """Numeric codes 1..q for label data (irrCAC uses the labels' positions as category values)."""
    values = frame.stack().dropna()
    if pd.api.types.is_numeric_dtype(values):
        cats = sorted(float(v) for v in values.unique())
        return frame.astype(float), cats, cats
    labels = sorted(values.unique())
    codes = {lab: float(i + 1) for i, lab in enumerate(labels)}
    return frame.apply(lambda col: col.map(codes)), [codes[lab] for lab in labels], labels


def irrcac_datasets(expected: dict) -> None:
    from irrCAC import datasets

    out = DATA / "irrcac"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("raw_4raters", "raw_5observers", "raw_ben_gerry", "raw_g1g2", "raw_gender"):
        raw = getattr(datasets, name)().reset_index(drop=True)
        raw.to_csv(out / f"{name}.csv", index=False)
        num, cats, labels = coded(raw)
        expected["irrcac"][name] = {
            "categories": cats,
            "labels": [str(x) for x in labels],
            "raw": irrcac_raw(raw, labels),
        }
        expected["krippendorff"][name] = krippendorff_levels(num.to_numpy(float), cats)
    for name in ("table_cont3x3abstractors", "table_cont4x4diagnosis"):
        table = getattr(datasets, name)()
        table.to_csv(out / f"{name}.csv", index=False)
        expected["irrcac"][name] = {"table": irrcac_table(table)}
    for name in ("dist_4cat", "dist_g1g2", "distrib_6raters"):
        dist = getattr(datasets, name)().reset_index(drop=True)
        dist.to_csv(out / f"{name}.csv", index=False)
        counts = dist.to_numpy(int)
        width = counts.sum(axis=1).max()
        rows = [[float(k + 1) for k, c in enumerate(r) for _ in range(c)] for r in counts]
        raw = pd.DataFrame([r + [np.nan] * (width - len(r)) for r in rows])
        cats = [float(k + 1) for k in range(counts.shape[1])]
        expected["irrcac"][name] = {
            "categories": cats,
            "raw": irrcac_raw(raw, cats, coefs=("gwet", "bp", "fleiss", "krippendorff")),
        }


def krippendorff_levels(ratings: np.ndarray, cats: list) -> dict:
    import krippendorff

    return {
        level: float(krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level, value_domain=cats))
        for level in ("nominal", "ordinal", "interval", "ratio")
    }


def make_generated(name: str, raters: int, q: int, missing: float, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(sum(map(ord, name)))
    truth = rng.uniform(0.5, q + 0.5, n)
    h = np.clip(np.round(truth[:, None] + rng.normal(0, 0.8, (n, raters))), 1, q)
    h[rng.random((n, raters)) < missing] = np.nan
    h[np.isnan(h).all(axis=1), 0] = 1.0
    frame = pd.DataFrame(h, columns=[f"h{j + 1}" for j in range(raters)])
    frame["system"] = np.round(truth + rng.normal(0, 0.6, n), 3)
    frame["group"] = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    frame["weight"] = np.round(rng.uniform(0.5, 2.0, n), 3)
    return frame


def pair_peers(h1: np.ndarray, sys: np.ndarray, weight: np.ndarray, cats: list) -> dict:
    """scikit-learn, statsmodels and SciPy on the first human column and the system score."""
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score, confusion_matrix
    from statsmodels.stats.inter_rater import cohens_kappa

    ok = np.isfinite(h1)
    a, b, w = h1[ok], sys[ok], weight[ok]
    br = np.clip(np.round(b), cats[0], cats[-1])
    out: dict = {"sklearn": {}, "statsmodels": {}, "scipy": {}}
    for wt in (None, "linear", "quadratic"):
        key = wt or "identity"
        out["sklearn"][key] = {
            "labels": float(cohen_kappa_score(a, br, labels=cats, weights=wt)),
            "sample_weight": float(cohen_kappa_score(a, br, labels=cats, weights=wt, sample_weight=w)),
        }
        res = cohens_kappa(confusion_matrix(a, br, labels=cats), wt=wt)
        out["statsmodels"][key] = {
            k: float(getattr(res, k))
            for k in ("kappa", "std_kappa", "std_kappa0", "pvalue_two_sided", "kappa_low", "kappa_upp")
        }
    r = stats.pearsonr(a, b)
    ci = r.confidence_interval()
    out["scipy"] = {
        "kendall_tau_b": float(stats.kendalltau(a, b, variant="b").statistic),
        "kendall_tau_c": float(stats.kendalltau(a, b, variant="c").statistic),
        "spearman": float(stats.spearmanr(a, b).statistic),
        "pearson": float(r.statistic),
        "pearson_p": float(r.pvalue),
        "pearson_ci": [float(ci.low), float(ci.high)],
    }
    return out


def rsmtool_peers(frame: pd.DataFrame, raters: int, cats: list) -> dict:
    from rsmtool.analyzer import Analyzer
    from rsmtool.fairness_utils import get_fairness_analyses
    from rsmtool.preprocessor import FeaturePreprocessor
    from rsmtool.utils import metrics as rm
    from rsmtool.utils.prmse import mse_true, prmse_true, true_score_variance, variance_of_errors

    ref = frame[frame["h1"].notna()]
    h1, sysr = ref["h1"], ref["system"]
    out = {
        "observed": Analyzer.metrics_helper(h1, sysr).to_dict(),
        "observed_rounded": Analyzer.metrics_helper(h1, np.clip(np.round(sysr), cats[0], cats[-1])).to_dict(),
    }
    if raters >= 2:
        both = ref[ref["h2"].notna()]
        out["human_human"] = Analyzer.metrics_helper(both["h1"], both["h2"], smd_method="pooled").to_dict()
    humans = frame[[f"h{j + 1}" for j in range(raters)]]
    out["true_score"] = {
        "rater_error_variance": variance_of_errors(humans),
        "true_score_variance": true_score_variance(humans),
        "mse_true": mse_true(frame["system"], humans),
        "prmse": prmse_true(frame["system"], humans),
    }
    g = ref["group"] == "b"
    sd_h, sd_m = h1.std(ddof=1), sysr.std(ddof=1)
    out["dsm_b"] = rm.difference_of_standardized_means(h1[g], sysr[g], h1.mean(), sysr.mean(), sd_h, sd_m)
    out["smd_johnson_b"] = rm.standardized_mean_difference(h1[g], sysr[g], sd_h, sd_m, method="johnson")
    out["smd_williamson_b"] = rm.standardized_mean_difference(h1[g], sysr[g], sd_h, sd_m, method="williamson")
    out["trim"] = FeaturePreprocessor().trim(sysr.to_numpy(), cats[0], cats[-1]).tolist()[:20]
    df = pd.DataFrame(
        {
            "sc1": h1.to_numpy(),
            "raw": sysr.to_numpy(),
            "L1": ref["group"].to_numpy(),
            "spkitemid": np.arange(len(ref)).astype(str),
        }
    )
    _, cont = get_fairness_analyses(df, "L1", "raw")
    fm = cont["fairness_metrics_by_L1"]
    out["fairness"] = {
        key: {"value": float(fm.loc["R2", col]), "p_value": float(fm.loc["sig", col])}
        for key, col in (
            ("osa", "Overall score accuracy"),
            ("osd", "Overall score difference"),
            ("csd", "Conditional score difference"),
        )
    }
    _, cont = get_fairness_analyses(df, "L1", "raw", base_group="b")
    out["fairness_base_b"] = {}
    for key in ("osa", "osd", "csd"):
        est = cont[f"estimates_{key}_by_L1"]
        out["fairness_base_b"][key] = {
            ("Intercept" if str(name).startswith("Intercept") else str(name)): {
                "estimate": float(row["estimate"]),
                "p_value": float(row["P>[t]"]),
                "ci": [float(row["[0.025"]), float(row["0.975]"])],
            }
            for name, row in est.iterrows()
        }
    return {k: (float(v) if isinstance(v, (float, np.floating, int)) else v) for k, v in out.items()}


def main() -> None:
    expected: dict = {
        "versions": {
            p: version(p) for p in ("irrCAC", "krippendorff", "statsmodels", "scikit-learn", "scipy", "rsmtool")
        },
        "irrcac": {},
        "krippendorff": {},
        "generated": {},
    }
    irrcac_datasets(expected)
    (DATA / "generated").mkdir(parents=True, exist_ok=True)
    for name, (raters, q, missing, n) in GENERATED.items():
        frame = make_generated(name, raters, q, missing, n)
        frame.to_csv(DATA / "generated" / f"{name}.csv", index=False)
        cats = [float(c) for c in range(1, q + 1)]
        humans = frame[[f"h{j + 1}" for j in range(raters)]]
        entry = {
            "categories": cats,
            "irrcac": irrcac_raw(humans, cats, weights=("identity", "linear", "quadratic", "ordinal")),
            "krippendorff": krippendorff_levels(humans.to_numpy(float), cats),
            **pair_peers(frame["h1"].to_numpy(), frame["system"].to_numpy(), frame["weight"].to_numpy(), cats),
            "rsmtool": rsmtool_peers(frame, raters, cats),
        }
        expected["generated"][name] = entry
        print(name, "done", flush=True)
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
