"""The peer-comparison suite: our numbers against the peers' frozen ones (``expected.json``, ``generate.py``).

``run()`` compares every number and returns the records; ``tests/test_metrics_peers.py`` asserts that every
difference is a documented one, and ``python -m tests.peers.compare`` prints the README's peer table.
Tolerances: 1e-9 for point estimates, standard errors and p-values, 1e-6 for interval bounds.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.intervals.agreement_variance import agreement_inference, table_inference
from easl_toolkit.core.metrics.intervals.kappa_test import cohen_kappa_test
from easl_toolkit.core.metrics.load import load_long
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.registry import report_name

HERE = Path(__file__).resolve().parent
POINT, INTERVAL = 1e-9, 1e-6
COEF_NAMES = {
    "gwet": "Gwet AC1/AC2",
    "bp": "Brennan-Prediger",
    "fleiss": "Fleiss kappa",
    "conger": "Conger kappa",
    "krippendorff": "Krippendorff alpha (weighted)",
}
#: Deliberate differences (the README's "different, and why").
DOCUMENTED = {
    "bp p-value": "irrCAC's Brennan-Prediger p-value is one-sided (1 - F_t); ours is two-sided like every other "
    "coefficient (and Gwet's R package)",
}


@dataclass
class Record:
    peer: str
    metric: str
    where: str
    ours: float
    theirs: float
    equal: bool
    documented: str | None = None


class Tally:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.unsupported: list[tuple[str, str, str]] = []

    def check(self, peer: str, metric: str, where: str, ours, theirs, tol: float = POINT, documented=None) -> None:
        ours, theirs = float(np.nan if ours is None else ours), float(np.nan if theirs is None else theirs)
        equal = (np.isnan(ours) and np.isnan(theirs)) or bool(abs(ours - theirs) <= tol)
        self.records.append(Record(peer, metric, where, ours, theirs, equal, None if equal else documented))

    def interval(self, peer: str, metric: str, where: str, ours, theirs) -> None:
        for k, side in enumerate(("low", "high")):
            self.check(peer, f"{metric} interval {side}", where, ours[k], theirs[k], INTERVAL)


def expected() -> dict:
    return json.loads((HERE / "expected.json").read_text())


def _irrcac(t: Tally, where: str, ratings: np.ndarray, cats: list, peer: dict, weights=None) -> None:
    for w, coefs in peer.items():
        if weights and w not in weights:
            continue
        if "error" in coefs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    agreement_inference(ratings, cats, weights=w)
                except ValueError:
                    t.check("irrCAC", f"{w} weights refused (category 0)", where, 1.0, 1.0)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = agreement_inference(ratings, cats, weights=w, coefficients=tuple(coefs))
        for c, v in coefs.items():
            o = ours[c]
            name = f"{COEF_NAMES[c]} ({w})"
            t.check("irrCAC", name, where, o.value, v["value"])
            t.check("irrCAC", f"{name} se", where, o.se, v["se"])
            t.interval("irrCAC", name, where, (o.low, o.high), v["ci"])
            t.check(
                "irrCAC",
                f"{name} p-value",
                where,
                o.p_value,
                v["p_value"],
                documented=DOCUMENTED["bp p-value"] if c == "bp" else None,
            )


def _coded(frame: pd.DataFrame, labels: list[str], cats: list) -> np.ndarray:
    if all(_is_number(x) for x in labels):
        return frame.to_numpy(dtype=float)
    codes = dict(zip(labels, cats))
    return frame.apply(lambda col: col.map(lambda x: codes.get(x, np.nan) if isinstance(x, str) else np.nan)).to_numpy(
        dtype=float
    )


def _is_number(x: str) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def irrcac_datasets(t: Tally, exp: dict) -> None:
    data = HERE / "data" / "irrcac"
    for name, entry in exp["irrcac"].items():
        frame = pd.read_csv(data / f"{name}.csv")
        if "raw" in entry and not name.startswith(("dist", "distrib")):
            ratings = _coded(frame, entry["labels"], entry["categories"])
            _irrcac(t, name, ratings, entry["categories"], entry["raw"])
            kp = exp["krippendorff"][name]
            for level, value in kp.items():
                t.check(
                    "krippendorff",
                    f"alpha ({level})",
                    name,
                    M.krippendorff_alpha(ratings, level=level, categories=entry["categories"]),
                    value,
                )
            _pipeline_all_raters(t, name, ratings, entry, kp)
        elif "raw" in entry:
            ratings = M.ratings_from_distribution(frame.to_numpy(), entry["categories"])
            _irrcac(t, name + " (distribution)", ratings, entry["categories"], entry["raw"])
        else:
            _table(t, name, frame.to_numpy(dtype=float), entry["table"])


def _pipeline_all_raters(t: Tally, where: str, ratings: np.ndarray, entry: dict, alpha: dict) -> None:
    """The same numbers through ``easl evaluate``'s all-raters block, every weighting."""
    cats = entry["categories"]
    extra = tuple(w for w in ("ordinal", "radical", "ratio", "circular", "bipolar") if "error" not in entry["raw"][w])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = M.evaluate(
            ratings,
            {"none": np.zeros(ratings.shape[0])},
            options=EvaluationOptions(weights=extra, scale=M.Scale(min(cats), max(cats), categories=tuple(cats))),
        )
    block = ev.to_json()["all_raters"]
    for w in ("identity", "linear", "quadratic", *extra):
        peer = entry["raw"][w]
        for c in ("gwet", "bp", "fleiss", "conger"):
            key = report_name(c, w)
            t.check("irrCAC", f"{COEF_NAMES[c]} ({w}), easl evaluate", where, block[key], peer[c]["value"])
            t.interval(
                "irrCAC", f"{COEF_NAMES[c]} ({w}), easl evaluate", where, block["analytic"][key]["ci"], peer[c]["ci"]
            )
    for level, value in alpha.items():
        t.check("krippendorff", f"alpha ({level}), easl evaluate", where, block["krippendorff_alpha_" + level], value)


def _table(t: Tally, where: str, table: np.ndarray, peer: dict) -> None:
    """Two raters given as a contingency table (``table_inference``)."""
    for w, coefs in peer.items():
        ours = table_inference(table, weights=w)
        for theirs_name, ours_name in (
            ("cohen", "conger"),
            ("scott", "fleiss"),
            ("gwet", "gwet"),
            ("bp", "bp"),
            ("krippendorff", "krippendorff"),
        ):
            v, o = coefs[theirs_name], ours[ours_name]
            name = f"{theirs_name} ({w}), table input"
            t.check("irrCAC", name, where, o.value, v["value"])
            t.check("irrCAC", f"{name} se", where, o.se, v["se"])
            if np.isfinite(v["ci"][0]):
                t.interval("irrCAC", name, where, (o.low, o.high), v["ci"])


def generated(t: Tally, exp: dict) -> None:
    for name, entry in exp["generated"].items():
        frame = pd.read_csv(HERE / "data" / "generated" / f"{name}.csv")
        cats = entry["categories"]
        humans = frame[[c for c in frame.columns if c.startswith("h")]].to_numpy(float)
        _irrcac(t, name, humans, cats, entry["irrcac"])
        for level, value in entry["krippendorff"].items():
            t.check("krippendorff", f"alpha ({level})", name, M.krippendorff_alpha(humans, level=level), value)
        ok = np.isfinite(humans[:, 0])
        a, s, w = humans[ok, 0], frame["system"].to_numpy()[ok], frame["weight"].to_numpy()[ok]
        sr = np.clip(np.round(s), cats[0], cats[-1])
        for wt, sk in entry["sklearn"].items():
            weights = None if wt == "identity" else wt
            t.check(
                "scikit-learn",
                f"cohen_kappa_score ({wt}, labels)",
                name,
                M.cohen_kappa(a, sr, weights=weights, labels=cats),
                sk["labels"],
            )
            t.check(
                "scikit-learn",
                f"cohen_kappa_score ({wt}, sample_weight)",
                name,
                M.cohen_kappa(a, sr, weights=weights, labels=cats, sample_weight=w),
                sk["sample_weight"],
            )
            st = entry["statsmodels"][wt]
            res = cohen_kappa_test(a, sr, weights=weights, labels=cats)
            for ours, key in (
                (res.kappa, "kappa"),
                (res.se, "std_kappa"),
                (res.se0, "std_kappa0"),
                (res.p_value, "pvalue_two_sided"),
            ):
                t.check("statsmodels", f"cohens_kappa {key} ({wt})", name, ours, st[key])
            t.interval(
                "statsmodels", f"cohens_kappa ({wt})", name, (res.low, res.high), (st["kappa_low"], st["kappa_upp"])
            )
        _pipeline_pair(t, name, frame, humans, cats, entry)
        _long_form(t, name, frame, humans, entry)


def _pipeline_pair(t: Tally, name: str, frame: pd.DataFrame, humans: np.ndarray, cats: list, entry: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = M.evaluate(
            humans,
            {"system": frame["system"].to_numpy()},
            groups=frame["group"].to_numpy(),
            group_name="L1",
            options=EvaluationOptions(scale=M.Scale(cats[0], cats[-1])),
        )
    d = ev.to_json()
    obs = d["systems"]["system"]["observed"]
    sp = entry["scipy"]
    for key, peer_key in (
        ("kendall_tau_b", "kendall_tau_b"),
        ("kendall_tau_c", "kendall_tau_c"),
        ("spearman", "spearman"),
        ("corr", "pearson"),
    ):
        t.check("SciPy", peer_key, name, obs[key], sp[peer_key])
    corr = d["systems"]["system"]["analytic"]["corr"]
    t.check("SciPy", "pearsonr p-value", name, corr["p_value"], sp["pearson_p"])
    t.interval("SciPy", "pearsonr confidence_interval", name, corr["ci"], sp["pearson_ci"])
    rsm = entry["rsmtool"]
    for ours_key, peer_key, block in (
        ("N", "N", "observed"),
        ("h_mean", "h_mean", "observed"),
        ("h_sd", "h_sd", "observed"),
        ("sys_mean", "sys_mean", "observed"),
        ("sys_sd", "sys_sd", "observed"),
        ("corr", "corr", "observed"),
        ("qwk", "wtkappa", "observed"),
        ("smd", "SMD", "observed"),
        ("rmse", "RMSE", "observed"),
        ("r2", "R2", "observed"),
        ("conger_kappa", "kappa", "observed_rounded"),
        ("exact_agr", "exact_agr", "observed_rounded"),
        ("adj_agr", "adj_agr", "observed_rounded"),
    ):
        t.check("RSMTool", f"{peer_key} ({block})", name, obs[ours_key], rsm[block][peer_key])
    if "human_human" in rsm:
        hh = d["human_human"]
        for ours_key, peer_key in (
            ("N", "N"),
            ("corr", "corr"),
            ("qwk", "wtkappa"),
            ("smd", "SMD"),
            ("conger_kappa", "kappa"),
            ("exact_agr", "exact_agr"),
            ("adj_agr", "adj_agr"),
            ("rmse", "RMSE"),
            ("r2", "R2"),
        ):
            t.check("RSMTool", f"{peer_key} (human-human)", name, hh[ours_key], rsm["human_human"][peer_key])
    ts = d["systems"]["system"]["true_score"]
    for key, value in rsm["true_score"].items():
        t.check("RSMTool", key, name, ts[key], value)
    t.check("RSMTool", "DSM (group b)", name, d["subgroups"]["L1"]["b"]["system"]["dsm"], rsm["dsm_b"])
    ref = np.isfinite(humans[:, 0])
    h1, sys = humans[ref, 0], frame["system"].to_numpy()[ref]
    g = frame["group"].to_numpy()[ref] == "b"
    sd_h, sd_m = h1.std(ddof=1), sys.std(ddof=1)
    for method in ("johnson", "williamson"):
        t.check(
            "RSMTool",
            f"SMD ({method}, group b)",
            name,
            M.standardized_mean_difference(
                h1[g], sys[g], method=method, population_y_true_sd=sd_h, population_y_pred_sd=sd_m
            ),
            rsm[f"smd_{method}_b"],
        )
    trimmed = M.trim_scores(sys[:20], trim_min=cats[0], trim_max=cats[-1])
    for k, (o, p) in enumerate(zip(trimmed, rsm["trim"])):
        t.check("RSMTool", "trim", f"{name}[{k}]", o, p)
    fair = d["fairness"]["L1"]["system"]
    for key, peer in rsm["fairness"].items():
        t.check("RSMTool", f"fairness {key}", name, fair[key]["value"], peer["value"])
        t.check("RSMTool", f"fairness {key} p-value", name, fair[key]["p_value"], peer["p_value"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        based = M.fairness_analysis(h1, sys, frame["group"].to_numpy()[ref], base_group="b")
    for key, per in rsm["fairness_base_b"].items():
        for coef, peer in per.items():
            where = f"{name}, base group b"
            t.check("RSMTool", f"fairness {key} estimate", where, based[key]["estimates"][coef], peer["estimate"])
            t.check(
                "RSMTool",
                f"fairness {key} estimate p-value",
                where,
                based[key]["estimates_p_value"][coef],
                peer["p_value"],
            )
            t.interval("RSMTool", f"fairness {key} estimate", where, based[key]["estimates_ci"][coef], peer["ci"])


def _long_form(t: Tally, name: str, frame: pd.DataFrame, humans: np.ndarray, entry: dict) -> None:
    """Conger's kappa from the long form, in file order and shuffled."""
    rows = [
        {"item": f"u{i}", "rater": f"r{j + 1}", "score": humans[i, j]}
        for i in range(humans.shape[0])
        for j in range(humans.shape[1])
        if np.isfinite(humans[i, j])
    ]
    rows += [
        {"item": f"u{i}", "rater": "system", "score": float(frame["system"].iloc[i])} for i in range(humans.shape[0])
    ]
    long = pd.DataFrame(rows)
    for order, table in (("file order", long), ("shuffled", long.sample(frac=1.0, random_state=1))):
        path = HERE / f".long-{name}.csv"
        table.to_csv(path, index=False)
        try:
            data = load_long(path, columns=("item", "rater", "score"), system=["system"])
        finally:
            path.unlink()
        cats = entry["categories"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = M.conger_kappa(data.human, cats)
        t.check(
            "irrCAC",
            f"Conger kappa (identity), long form {order}",
            name,
            value,
            entry["irrcac"]["identity"]["conger"]["value"],
        )


def run() -> Tally:
    t = Tally()
    exp = expected()
    irrcac_datasets(t, exp)
    generated(t, exp)
    return t


def table(t: Tally) -> str:
    """The README's peer table: peer, numbers compared, equal, different (documented), not supported."""
    lines = ["| peer | compared | equal | different (documented) | undocumented differences |", "|---|---|---|---|---|"]
    for peer in sorted({r.peer for r in t.records}):
        recs = [r for r in t.records if r.peer == peer]
        diff = [r for r in recs if not r.equal]
        doc = [r for r in diff if r.documented]
        lines.append(f"| {peer} | {len(recs)} | {len(recs) - len(diff)} | {len(doc)} | {len(diff) - len(doc)} |")
    recs = t.records
    diff = [r for r in recs if not r.equal]
    lines.append(
        f"| all | {len(recs)} | {len(recs) - len(diff)} | {len([r for r in diff if r.documented])} | "
        f"{len([r for r in diff if not r.documented])} |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    tally = run()
    print(table(tally))
    for r in tally.records:
        if not r.equal:
            print(
                ("documented: " if r.documented else "UNDOCUMENTED: ") + f"{r.peer} {r.metric} {r.where}: "
                f"ours {r.ours!r}, theirs {r.theirs!r}"
            )
