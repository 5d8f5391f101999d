"""The evaluation pipeline behind ``easl evaluate``: one call computes every metric with reasons and intervals.

:func:`evaluate` takes the responses x raters human matrix and the system score vectors, applies the explicit
score policy (:func:`core.metrics.data.apply_score_policy`) and returns an :class:`Evaluation` whose ``data`` is
the JSON object of the CLI contract (NaN written as ``None`` with a ``<key>_reason`` next to it) and whose
``tables`` are the RSMTool-like tables written by ``--output``.

Which scores each metric compares (issue 3): exact/adjacent agreement and every chance-corrected coefficient
(kappa family, Gwet's AC, Brennan-Prediger, Scott's pi, all Krippendorff levels) use the system score rounded
half-to-even and clipped to the scale (and human scores mapped to the scale's categories the same way, with a
note when that changes any); correlations, QWK, SMD, MSE, R2 and the true-score metrics use the raw scores.
Observed metrics compare each system with the first human column (as RSMTool); human-human metrics compare the
first two human columns on responses that have both (pooled SMD).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from core.metrics.agreement import (
    agreement_tables_from_joint,
    agreement_totals,
    finish_agreement,
    gwet_standard_errors,
)
from core.metrics.association import kendall_tau_b, spearman_rho, spearman_rho_resampled
from core.metrics.bootstrap import bootstrap_sums, fairness_ci_reason, fisher_z_ci, normal_ci, percentile_interval
from core.metrics.data import Scale, apply_score_policy, as_pair
from core.metrics.fairness import FAIRNESS_KEYS, fairness_analysis, fairness_design
from core.metrics.krippendorff import coincidence_delta, finish_alpha_from_coincidence
from core.metrics.notes import capture, caution, quiet, undefined
from core.metrics.observed import (
    finish_mse,
    finish_pearson,
    finish_qwk,
    finish_r2,
    finish_sd,
    finish_smd,
    kappa_from_table,
    moments,
    pair_moment_sums,
)
from core.metrics.sums import RowSums, nan_where
from core.metrics.true_score import (
    HIGH_AGREEMENT_R,
    MIN_DOUBLE_SCORED,
    MIN_DOUBLE_SCORED_HIGH_AGREEMENT,
    finish_true_score,
    true_score_sums,
    true_score_totals,
)

OBSERVED_KEYS = (
    "N", "h_mean", "h_sd", "sys_mean", "sys_sd", "corr", "spearman", "kendall_tau_b", "qwk", "kappa", "kappa_linear",
    "kappa_quadratic", "exact_agr", "adj_agr", "smd", "mse", "rmse", "r2", "gwet_ac1", "gwet_ac2_linear",
    "gwet_ac2_quadratic", "bp", "bp_linear", "bp_quadratic", "scott_pi", "scott_pi_linear", "scott_pi_quadratic",
    "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal", "krippendorff_alpha_interval",
)
SHORT_KEYS = ("N", "h_mean", "h_sd", "sys_mean", "sys_sd", "corr", "qwk", "kappa", "exact_agr", "adj_agr", "smd",
              "mse", "r2", "gwet_ac1", "krippendorff_alpha_interval")
TRUE_SCORE_KEYS = ("N", "N_raters", "N_single", "N_multiple", "rater_error_variance", "true_score_variance",
                   "mse_true", "prmse")
RANK_KEYS = ("spearman", "kendall_tau_b")
MULTI_RATER_KEYS = ("gwet_ac1", "gwet_ac2_linear", "gwet_ac2_quadratic", "bp", "bp_linear", "bp_quadratic",
                    "fleiss_kappa", "fleiss_kappa_linear", "fleiss_kappa_quadratic", "conger_kappa",
                    "conger_kappa_linear", "conger_kappa_quadratic", "krippendorff_alpha_nominal",
                    "krippendorff_alpha_ordinal", "krippendorff_alpha_interval")
_SUFFIX = {"identity": "", "linear": "_linear", "quadratic": "_quadratic"}


# ---------------------------------------------------------------------------------------------------------------
# One comparison (human vs system, or human vs human) as sums + lazy finishers.

@dataclass
class PairSuite:
    """Sufficient statistics and finishers of every observed metric for one pair of score vectors.

    ``a`` (human) and ``b`` (system or second human) are full-length; ``rows`` selects the responses compared.
    ``cats`` are the scale's categories (None: the categorical family is undefined).
    """

    prefix: str
    a: np.ndarray
    b: np.ndarray
    rows: np.ndarray
    n_total: int
    cats: np.ndarray | None
    smd_method: str
    shift: dict = field(init=False)
    _sums: RowSums | None = field(init=False, default=None)

    def __post_init__(self):
        a, b = self.a[self.rows], self.b[self.rows]
        self.shift = {"ca": float(np.mean(a)) if a.size else 0.0, "cb": float(np.mean(b)) if b.size else 0.0}
        self._sub = (a, b)
        if self.cats is not None and self.cats.size:
            ar, br = _to_cats(a, self.cats), _to_cats(b, self.cats)
            self._cat = (ar, br, np.searchsorted(self.cats, ar), np.searchsorted(self.cats, br))
        else:
            self._cat = None

    @property
    def sums(self) -> RowSums:
        """Per-response terms over all ``n_total`` responses (for the bootstrap); built on first use."""
        if self._sums is None:
            a, b = self._sub
            p = self.prefix
            sub, _ = pair_moment_sums(a, b, p)    # centred at the sample means, as self.shift
            if self._cat is not None:
                ar, br, ia, ib = self._cat
                q = self.cats.size
                sub.add(p + "exact", (ar == br).astype(np.float64))
                sub.add(p + "adjacent", (np.abs(ar - br) <= 1.0).astype(np.float64))
                sub.add_counts(p + "joint", np.arange(a.size), ia * q + ib, 1.0, q * q)
            self._sums = sub.embedded(self.rows, self.n_total)
        return self._sums

    def point_totals(self) -> dict:
        """The totals of :attr:`sums` for the sample itself, computed directly (no per-response arrays kept)."""
        a, b = self._sub
        p = self.prefix
        da = a - self.shift["ca"]
        db = b - self.shift["cb"]
        d = a - b
        dot = lambda x, y: np.asarray(np.einsum("i,i->", x, y))  # noqa: E731  (no BLAS threads for vectors)
        t = {p + "n": np.asarray(float(a.size)), p + "sa": np.asarray(da.sum()), p + "sb": np.asarray(db.sum()),
             p + "saa": dot(da, da), p + "sbb": dot(db, db), p + "sab": dot(da, db), p + "sdd": dot(d, d)}
        if self._cat is not None:
            ar, br, ia, ib = self._cat
            q = self.cats.size
            joint = np.bincount(ia * q + ib, minlength=q * q).astype(np.float64)
            diff = np.abs(ar - br)
            t[p + "exact"] = np.asarray(float((diff == 0).sum()))
            t[p + "adjacent"] = np.asarray(float((diff <= 1.0).sum()))
            t[p + "joint"] = joint
        return t

    def finishers(self, t: dict) -> dict[str, Callable[[], np.ndarray]]:
        """``key -> zero-argument callable`` computing the metric from totals ``t`` (batch-capable)."""
        p = self.prefix
        mo = moments(t, self.shift, p)
        f: dict[str, Callable[[], np.ndarray]] = {
            "N": lambda: mo["n"],
            "h_mean": lambda: np.where(mo["n"] > 0, mo["mean_a"], np.nan),
            "h_sd": lambda: finish_sd(mo, "a"),
            "sys_mean": lambda: np.where(mo["n"] > 0, mo["mean_b"], np.nan),
            "sys_sd": lambda: finish_sd(mo, "b"),
            "corr": lambda: finish_pearson(mo),
            "qwk": lambda: finish_qwk(mo),
            "smd": lambda: finish_smd(mo, self.smd_method),
            "mse": lambda: finish_mse(mo),
            "rmse": lambda: np.sqrt(finish_mse(mo)),
            "r2": lambda: finish_r2(mo),
        }
        cats = self.cats
        if cats is None or not cats.size:

            def none():
                return np.full(np.shape(mo["n"]), undefined("no score categories: give an explicit scale with "
                                                             "categories (e.g. --scale MIN MAX with integer bounds)"))
            for key in OBSERVED_KEYS:
                if key not in f and key not in RANK_KEYS:
                    f[key] = none
            return f
        q = cats.size
        n = mo["n"]

        def pct(name):
            def g():
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = 100.0 * t[p + name] / n
                return nan_where(n < 1, v, "agreement needs at least 1 response")
            return g

        f["exact_agr"] = pct("exact")
        f["adj_agr"] = pct("adjacent")
        table = lambda: t[p + "joint"].reshape(np.shape(n) + (q, q))  # noqa: E731
        ag_cache: list = []

        def ag() -> dict:
            if not ag_cache:
                ag_cache.append(agreement_tables_from_joint(table()))
            return ag_cache[0]
        for w, suffix in (("identity", ""), ("linear", "_linear"), ("quadratic", "_quadratic")):
            f["kappa" + suffix] = (lambda w=w: kappa_from_table(table(), cats, None if w == "identity" else w))
            for key, coef in (("gwet_ac1" if w == "identity" else "gwet_ac2" + suffix, "gwet"),
                              ("bp" + suffix, "bp"), ("scott_pi" + suffix, "fleiss")):
                f[key] = (lambda w=w, coef=coef: finish_agreement(ag(), cats, w, 2, "", (coef,))[coef])
        coinc = lambda: ag()["coinc"].reshape(np.shape(n) + (q, q))  # noqa: E731
        for level in ("nominal", "ordinal", "interval"):
            f["krippendorff_alpha_" + level] = (
                lambda level=level: finish_alpha_from_coincidence(coinc(), coincidence_delta(cats, level)))
        return f

    def spearman_resampled(self, counts: np.ndarray) -> np.ndarray:
        """Spearman's rho on the compared responses for every resample of a chunk (counts (b, n_total))."""
        return spearman_rho_resampled(self.a[self.rows], self.b[self.rows], counts[:, self.rows])

    def ranks(self, index: np.ndarray | None = None) -> dict[str, Callable[[], float]]:
        """Spearman and Kendall on the compared responses of a resample (``index``: drawn rows) or the sample."""
        rows = self.rows if index is None else index[np.isin(index, self.rows)]
        a, b = self.a[rows], self.b[rows]
        return {"spearman": lambda: spearman_rho(a, b), "kendall_tau_b": lambda: kendall_tau_b(a, b)}


def _to_cats(x: np.ndarray, cats: np.ndarray) -> np.ndarray:
    """Round half-to-even and clip to the categories (integer scale), else nearest category."""
    lo, hi = cats[0], cats[-1]
    if np.all(cats == np.round(cats)) and np.all(np.diff(cats) == 1):
        return np.clip(np.round(x), lo, hi)
    return Scale(lo, hi, tuple(cats)).to_categories(x)


def _memo(fn: Callable) -> Callable:
    """Compute once; later calls return the value and re-emit its reasons (so every key keeps them)."""
    cell: list = []

    def wrapped():
        if not cell:
            cell.append(capture(fn))
        value, why, careful = cell[0]
        for reason in why:
            undefined(reason)
        for c in careful:
            caution(c)
        return value
    return wrapped


def _point(finishers: dict[str, Callable], keys=None) -> tuple[dict, dict, list]:
    """Evaluate finishers once with reasons: (values, reasons, cautions)."""
    values, reasons, cautions = {}, {}, []
    for key, fn in finishers.items():
        if keys is not None and key not in keys:
            continue
        v, why, careful = capture(fn)
        values[key] = float(np.asarray(v, dtype=np.float64))
        if why and not np.isfinite(values[key]):
            reasons[key] = "; ".join(why)
        cautions.extend(c for c in careful if c not in cautions)
    return values, reasons, cautions


def _batch(finishers: dict[str, Callable]) -> dict[str, np.ndarray]:
    return {k: quiet(fn) for k, fn in finishers.items()}


def observed_metrics(y_true, y_pred, *, categories=None, smd_method: str = "unpooled", ranks: bool = True) -> dict:
    """Every observed-score metric of one comparison at once (the ``observed`` keys of ``easl evaluate``).

    Moment metrics (N, means, sds, r, QWK, SMD, MSE, RMSE, R2) use the raw scores; with ``categories`` (the scale's
    category values) exact/adjacent agreement, the kappa family, Gwet's AC, Brennan-Prediger, Scott's pi and
    Krippendorff's alpha compare ``y_true`` with ``y_pred`` rounded half-to-even and clipped to the categories.
    One pass of sufficient statistics serves every metric (definitions: :mod:`core.metrics.observed`,
    :mod:`core.metrics.agreement`, :mod:`core.metrics.krippendorff`). ``ranks=False`` skips Spearman and Kendall
    (the only O(N log N) ones). Undefined values are NaN with an UndefinedMetricWarning naming the reason.
    """

    a, b = as_pair(y_true, y_pred)
    cats = None if categories is None else np.asarray(categories, dtype=np.float64)
    suite = PairSuite("", a, b, np.arange(a.size), a.size, cats, smd_method)
    f = suite.finishers(suite.point_totals())
    if ranks:
        f.update(suite.ranks())
    return {k: float(np.asarray(f[k]())) for k in OBSERVED_KEYS if k in f}


# ---------------------------------------------------------------------------------------------------------------
# The pipeline.

@dataclass
class Evaluation:
    """Result of :func:`evaluate`: the JSON object, the tables, and the arrays the plots need."""

    data: dict
    tables: dict[str, pd.DataFrame]
    human: np.ndarray
    system: dict[str, np.ndarray]
    human_names: list[str]
    scale: Scale
    prmse_samples: dict[str, np.ndarray]


def _jsonable(values: dict, reasons: dict, order=None) -> dict:
    out = {}
    for key in (order or values.keys()):
        if key not in values:
            continue
        v = values[key]
        if isinstance(v, (float, np.floating)) and not np.isfinite(v):
            out[key] = None
            out[key + "_reason"] = reasons.get(key, "undefined for these data")
        elif isinstance(v, (float, np.floating)) and key in ("N", "N_raters", "N_single", "N_multiple") and float(v).is_integer():
            out[key] = int(v)
        else:
            out[key] = float(v) if isinstance(v, (np.floating,)) else v
    return out


def _ci_json(ci: dict) -> dict:
    return {k: [None if not np.isfinite(lo) else lo, None if not np.isfinite(hi) else hi] for k, (lo, hi) in ci.items()}


def evaluate(human, system: dict, *, human_names: list[str] | None = None, scale: Scale | None = None,
             groups=None, group_name: str = "group", exclude_zeros: bool = False,
             rater_error_variance: float | None = None, n_bootstrap: int = 0, seed: int = 0,
             confidence: float = 0.95, progress: Callable[[int, int], None] | None = None,
             extra_notes: list[str] | None = None) -> Evaluation:
    """Every metric for every system against the human ratings, with reasons, cautions and intervals.

    Parameters
    ----------
    human : array of shape (n, R)
        Human ratings, NaN for missing; column 0 is the reference human (RSMTool's ``human_score_column``).
    system : dict name -> array of shape (n,)
    human_names : list of str, optional
    scale : Scale, optional
        Explicit scale. Default: [min, max] of the human scores after the policy, with a note saying so.
    groups : array of shape (n,), optional
        Subgroup labels for DSM by subgroup and the fairness analyses.
    exclude_zeros : bool
        Drop responses whose first human score is 0; other 0 human scores become missing (RSMTool default).
    rater_error_variance : float, optional
        V_e from another sample for the true-score metrics.
    n_bootstrap : int
        Bootstrap resamples (0: none); percentile intervals at ``confidence``.
    seed : int
        Seed of the one ``numpy.random.Generator`` used for resampling.
    progress : callable(done, total), optional

    Returns
    -------
    Evaluation
    """
    h_all = np.asarray(human, dtype=np.float64)
    if h_all.ndim == 1:
        h_all = h_all[:, None]
    n_in = h_all.shape[0]
    names = list(human_names) if human_names else [f"h{j + 1}" for j in range(h_all.shape[1])]
    if len(names) != h_all.shape[1]:
        raise ValueError("human_names must name every human column")
    if not system:
        raise ValueError("at least one system score vector is needed")
    notes: list[str] = list(extra_notes or [])
    policy = apply_score_policy(h_all, system, scale=scale, exclude_zeros=exclude_zeros)
    h = policy.human
    sys = policy.system
    n = h.shape[0]
    grp = None if groups is None else np.asarray(groups, dtype=object)[policy.keep]
    for reason, count in policy.dropped.items():
        notes.append(f"dropped {count} response(s): {reason}")
    for reason, count in policy.changed.items():
        notes.append(f"{count} rating(s): {reason}")
    if scale is None:
        finite = h[np.isfinite(h)]
        if finite.size and finite.max() > finite.min():
            scale = Scale(float(np.floor(finite.min())), float(np.ceil(finite.max())))
            notes.append(f"no scale given: using [{scale.min:g}, {scale.max:g}] from the human scores; pass the "
                         "scale explicitly (--scale MIN MAX), categorical coefficients depend on it")
        else:
            lo = float(finite.min()) if finite.size else 0.0
            scale = Scale(lo, lo + 1.0)
            notes.append("no scale given and the human scores do not vary: using a two-point scale")
    cats = scale.category_array if scale.is_categorical else None
    if cats is not None:
        h_obs = h[np.isfinite(h)]
        changed = int((_to_cats(h_obs, cats) != h_obs).sum())
        if changed:
            notes.append(f"{changed} human rating(s) are not on the scale's categories; the categorical metrics use "
                         "them rounded half-to-even and clipped to the scale")
    else:
        notes.append("the scale has no categories: exact/adjacent agreement and the chance-corrected coefficients "
                     "are undefined")

    h1 = h[:, 0]
    all_rows = np.arange(n)
    suites: dict[str, PairSuite] = {}
    for s_name, m in sys.items():
        suites[s_name] = PairSuite(f"s:{s_name}:", h1, m, all_rows, n, cats, "unpooled")
    has_hh = h.shape[1] >= 2
    hh_rows = np.flatnonzero(np.isfinite(h[:, 0]) & np.isfinite(h[:, 1])) if has_hh else np.zeros(0, np.int64)
    hh_suite = PairSuite("hh:", h1, h[:, 1], hh_rows, n, cats, "pooled") if has_hh else None

    group_labels: list[str] = []
    group_suites: dict[tuple[int, str], PairSuite] = {}
    if grp is not None:
        labels = pd.Series(grp).astype(str).to_numpy()
        group_labels = sorted(set(labels.tolist()))
        for gi, g in enumerate(group_labels):
            sel = np.flatnonzero(labels == g)
            for s_name, m in sys.items():
                group_suites[(gi, s_name)] = PairSuite(f"g:{gi}:{s_name}:", h1, m, sel, n, cats, "unpooled")

    # fairness: encoded once per system; its resamples are the chunk's counts (the draws every metric sees)
    fair_designs = {s_name: fairness_design(h1, m, grp) for s_name, m in sys.items()} if grp is not None else {}

    totals: dict = {}
    for suite in [*suites.values(), *group_suites.values()]:
        totals.update(suite.point_totals())
    if hh_suite is not None:
        totals.update(hh_suite.point_totals())
    for s_name, m in sys.items():
        totals.update(true_score_totals(h, m, f"t:{s_name}:"))

    def all_sums() -> RowSums:
        out = RowSums(n)
        for suite in [*suites.values(), *group_suites.values()]:
            out.merge(suite.sums, "")
        if hh_suite is not None:
            out.merge(hh_suite.sums, "")
        for s_name, m in sys.items():
            out.merge(true_score_sums(h, m, f"t:{s_name}:")[0], "")
        return out

    def finishers_for(t: dict, index: np.ndarray | None = None, with_ranks: bool = True) -> dict[str, Callable]:
        f: dict[str, Callable] = {}
        hh_f = {}
        if hh_suite is not None:
            hh_f = hh_suite.finishers(t)
            if with_ranks:
                hh_f.update(hh_suite.ranks(index))
            hh_f = {k: _memo(fn) for k, fn in hh_f.items()}
            for k, fn in hh_f.items():
                f["hh:" + k] = fn
        for s_name, suite in suites.items():
            sf = suite.finishers(t)
            if with_ranks:
                sf.update(suite.ranks(index))
            sf = {k: _memo(fn) for k, fn in sf.items()}
            for k, fn in sf.items():
                f[f"s:{s_name}:{k}"] = fn
            tsp = f"t:{s_name}:"
            for k in ("rater_error_variance", "true_score_variance", "mse_true", "prmse"):
                f[tsp + k] = (lambda k=k, tsp=tsp: finish_true_score(t, rater_error_variance, tsp)[k])
            if hh_suite is not None:
                f[f"s:{s_name}:disattenuated_corr"] = (
                    lambda sf=sf, hh_f=hh_f: _disattenuate(sf["corr"](), hh_f["corr"]()))
                for k in OBSERVED_KEYS:
                    if k != "N" and k in hh_f:
                        f[f"d:{s_name}:{k}"] = (lambda a=sf[k], b=hh_f[k]: np.asarray(a()) - np.asarray(b()))
        for (gi, s_name), gsuite in group_suites.items():
            gf = gsuite.finishers(t)
            if with_ranks:
                gf.update(gsuite.ranks(index))
            for k, fn in gf.items():
                f[f"g:{gi}:{s_name}:{k}"] = fn
            f[f"g:{gi}:{s_name}:dsm"] = (lambda gsuite=gsuite, s_name=s_name: _dsm(
                moments(t, gsuite.shift, gsuite.prefix), moments(t, suites[s_name].shift, suites[s_name].prefix)))
        return f

    point_f = finishers_for(totals)
    values, reasons, cautions = _point(point_f)

    # ---------------- bootstrap
    samples: dict[str, np.ndarray] = {}
    if n_bootstrap and n_bootstrap > 0 and n >= 2:
        rng = np.random.default_rng(seed)
        done = [0]

        def prog(k):
            done[0] += k
            if progress is not None:
                progress(done[0], n_bootstrap)

        def per_resample(index):          # Kendall's tau: recomputed on each resample
            out = {}
            if hh_suite is not None:
                out["hh:kendall_tau_b"] = hh_suite.ranks(index)["kendall_tau_b"]()
            for s_name, suite in suites.items():
                out[f"s:{s_name}:kendall_tau_b"] = suite.ranks(index)["kendall_tau_b"]()
                if hh_suite is not None:
                    out[f"d:{s_name}:kendall_tau_b"] = out[f"s:{s_name}:kendall_tau_b"] - out["hh:kendall_tau_b"]
            for (gi, s_name), gsuite in group_suites.items():
                out[f"g:{gi}:{s_name}:kendall_tau_b"] = gsuite.ranks(index)["kendall_tau_b"]()
            return out

        def per_chunk(index, counts):     # Spearman's rho: vectorised over the chunk's resamples
            out = {}
            if hh_suite is not None:
                out["hh:spearman"] = hh_suite.spearman_resampled(counts)
            for s_name, suite in suites.items():
                out[f"s:{s_name}:spearman"] = suite.spearman_resampled(counts)
                if hh_suite is not None:
                    out[f"d:{s_name}:spearman"] = out[f"s:{s_name}:spearman"] - out["hh:spearman"]
            for (gi, s_name), gsuite in group_suites.items():
                out[f"g:{gi}:{s_name}:spearman"] = gsuite.spearman_resampled(counts)
            for s_name, design in fair_designs.items():     # OSA, OSD, CSD: batched over the chunk
                if design.problem is None:
                    for k, v in design.resampled(counts).items():
                        out[f"f:{s_name}:{k}"] = v
            return out

        samples = bootstrap_sums(all_sums(), lambda t: _batch(finishers_for(t, with_ranks=False)), n_bootstrap, rng,
                                 per_resample=per_resample, progress=prog, per_chunk=per_chunk)
    elif n_bootstrap and n_bootstrap > 0:
        notes.append("bootstrap skipped: it needs at least 2 responses")
    cis = {k: percentile_interval(v, confidence) for k, v in samples.items()}

    # ---------------- assemble
    def block(prefix: str, keys) -> tuple[dict, dict]:
        vals = {k: values[prefix + k] for k in keys if prefix + k in values}
        why = {k: reasons[prefix + k] for k in keys if prefix + k in reasons}
        return vals, why

    data: dict = {"n_responses": int(n), "n_input": int(n_in), "n_dropped": int(n_in - n),
                  "dropped": dict(policy.dropped), "scale": {"min": scale.min, "max": scale.max},
                  "human_columns": names, "confidence": confidence,
                  "bootstrap": {"n_resamples": int(n_bootstrap), "seed": int(seed)}}
    if cats is not None:
        data["scale"]["categories"] = [float(c) for c in cats]
    hh_vals, hh_why = block("hh:", OBSERVED_KEYS) if hh_suite is not None else ({}, {})
    data["human_human"] = _jsonable(hh_vals, hh_why, OBSERVED_KEYS)
    if hh_suite is None:
        notes.append("one human column: human-human agreement, degradation and the true-score metrics need a "
                     "second rating (or --rater-error-variance)")
    if h.shape[1] > 2 and cats is not None:
        mv, mw = _multi_rater(h, cats)
        data["human_human"].update({"all_raters": _jsonable(mv, mw, MULTI_RATER_KEYS)})
    if samples and hh_suite is not None:
        data["human_human_ci"] = _ci_json({k: cis["hh:" + k] for k in OBSERVED_KEYS if "hh:" + k in cis and k != "N"})

    data["systems"] = {}
    rows_eval, rows_ts, rows_deg, rows_ci = [], [], [], []
    prmse_samples = {}
    for s_name in sys:
        ov, ow = block(f"s:{s_name}:", OBSERVED_KEYS)
        tv, tw = block(f"t:{s_name}:", ("rater_error_variance", "true_score_variance", "mse_true", "prmse"))
        ts_counts = {"N": totals[f"t:{s_name}:N"], "N_raters": h.shape[1], "N_single": totals[f"t:{s_name}:N_single"],
                     "N_multiple": totals[f"t:{s_name}:N_multiple"]}
        ts_vals = {**{k: float(v) for k, v in ts_counts.items()}, **tv}
        dv, dw = block(f"d:{s_name}:", OBSERVED_KEYS)
        entry = {"observed": _jsonable(ov, ow, OBSERVED_KEYS), "true_score": _jsonable(ts_vals, tw, TRUE_SCORE_KEYS),
                 "degradation": _jsonable(dv, dw, [k for k in OBSERVED_KEYS if k != "N"])}
        dc_key = f"s:{s_name}:disattenuated_corr"
        if dc_key in values:
            dc = values[dc_key]
            entry["disattenuated_corr"] = None if not np.isfinite(dc) else dc
            if not np.isfinite(dc):
                entry["disattenuated_corr_reason"] = reasons.get(dc_key, "undefined for these data")
        else:
            entry["disattenuated_corr"] = None
            entry["disattenuated_corr_reason"] = "needs a second human column"
        # sample-size cautions for PRMSE
        entry_notes = _prmse_cautions(ts_vals, hh_vals.get("corr", np.nan), rater_error_variance)
        cautions.extend(c for c in entry_notes if c not in cautions)
        ci = {}
        if samples:
            for k in OBSERVED_KEYS:
                if f"s:{s_name}:{k}" in cis and k != "N":
                    ci[k] = cis[f"s:{s_name}:{k}"]
            for k in ("prmse", "mse_true", "true_score_variance", "rater_error_variance"):
                ci[k] = cis.get(f"t:{s_name}:{k}", (np.nan, np.nan))
            if dc_key in cis:
                ci["disattenuated_corr"] = cis[dc_key]
            for k in OBSERVED_KEYS:
                if f"d:{s_name}:{k}" in cis:
                    ci["degradation_" + k] = cis[f"d:{s_name}:{k}"]
            prmse_samples[s_name] = samples.get(f"t:{s_name}:prmse", np.zeros(0))
        entry["ci"] = _ci_json(ci)
        entry["analytic_ci"] = _ci_json(_analytic(h1, sys[s_name], ov, cats, confidence))
        data["systems"][s_name] = entry
        rows_eval.append({"system": s_name, **{k: ov.get(k, np.nan) for k in OBSERVED_KEYS}})
        rows_ts.append({"system": s_name, **{k: ts_vals.get(k, np.nan) for k in TRUE_SCORE_KEYS}})
        rows_deg.append({"system": s_name, **{k: dv.get(k, np.nan) for k in OBSERVED_KEYS if k != "N"},
                         "disattenuated_corr": values.get(dc_key, np.nan)})
        for k, (lo, hi) in ci.items():
            rows_ci.append({"system": s_name, "metric": k, "low": lo, "high": hi})

    # ---------------- subgroups and fairness
    data["subgroups"], data["fairness"] = {}, {}
    tables: dict[str, pd.DataFrame] = {}
    if grp is not None:
        sub_json: dict = {}
        sub_rows = []
        keys = (*OBSERVED_KEYS, "dsm")
        for gi, g in enumerate(group_labels):
            sub_json[g] = {}
            for s_name in sys:
                gv, gw = block(f"g:{gi}:{s_name}:", keys)
                entry = _jsonable(gv, gw, keys)
                if samples:
                    entry["ci"] = _ci_json({k: cis[f"g:{gi}:{s_name}:{k}"] for k in keys
                                            if k != "N" and f"g:{gi}:{s_name}:{k}" in cis})
                sub_json[g][s_name] = entry
                sub_rows.append({"group": g, "system": s_name, **{k: gv.get(k, np.nan) for k in keys}})
        data["subgroups"][group_name] = sub_json
        tables[f"eval_by_{group_name}"] = pd.DataFrame(sub_rows)
        fair_rows = []
        data["fairness"][group_name] = {}
        for s_name, m in sys.items():
            fa, why, _ = capture(fairness_analysis, h1, m, grp)
            fj = _fair_json(fa, why)
            fci: dict = {}
            if n_bootstrap and n_bootstrap > 0:
                design = fair_designs[s_name]
                fci = {k: cis.get(f"f:{s_name}:{k}", (np.nan, np.nan)) for k in FAIRNESS_KEYS}
                fj["ci"] = _ci_json(fci)
                ci_why = {k: fairness_ci_reason(design.problem if samples else "the bootstrap needs at least 2 "
                                                "responses", fa[k]["value"], "; ".join(why), n_bootstrap)
                          for k in FAIRNESS_KEYS if not np.isfinite(fci[k][0])}
                if ci_why:
                    fj["ci_reason"] = ci_why
            else:
                fj["ci"] = {}
            data["fairness"][group_name][s_name] = fj
            for key, label in (("osa", "Overall score accuracy"), ("osd", "Overall score difference"),
                               ("csd", "Conditional score difference")):
                rec = fa[key]
                row = {"system": s_name, "metric": label, "value": rec["value"], "p_value": rec["p_value"],
                       "r2": rec["r2"]}
                if fci:
                    row.update({"ci_low": fci[key][0], "ci_high": fci[key][1],
                                "ci_reason": fj.get("ci_reason", {}).get(key, "")})
                fair_rows.append({**row, **{f"coef_{g}": c for g, c in rec["estimates"].items()}})
        tables[f"fairness_{group_name}"] = pd.DataFrame(fair_rows)

    data["notes"] = notes + [c for c in cautions]
    tables["eval"] = pd.DataFrame(rows_eval)
    tables["eval_short"] = pd.DataFrame(rows_eval)[["system", *SHORT_KEYS]]
    if hh_suite is not None:
        tables["consistency"] = pd.DataFrame([{"human_1": names[0], "human_2": names[1],
                                               **{k: hh_vals.get(k, np.nan) for k in OBSERVED_KEYS}}])
        tables["degradation"] = pd.DataFrame(rows_deg)
    tables["true_score_eval"] = pd.DataFrame(rows_ts)
    if rows_ci:
        tables["ci"] = pd.DataFrame(rows_ci)
    return Evaluation(data=data, tables=tables, human=h, system=sys, human_names=names, scale=scale,
                      prmse_samples=prmse_samples)


def _disattenuate(r_hm, r_hh):
    r_hm = np.asarray(r_hm, dtype=np.float64)
    r_hh = np.asarray(r_hh, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = r_hm / np.sqrt(np.where(r_hh > 0, r_hh, np.nan))
    return nan_where(~(r_hh > 0) | np.isnan(r_hm), out,
                     "the disattenuated correlation needs a defined human-system r and a positive human-human r")


def _prmse_cautions(ts: dict, r_hh: float, external) -> list[str]:
    out = []
    n_mult = int(ts.get("N_multiple", 0))
    if external is None and n_mult > 0:
        need = MIN_DOUBLE_SCORED_HIGH_AGREEMENT if (np.isfinite(r_hh) and r_hh > HIGH_AGREEMENT_R) else MIN_DOUBLE_SCORED
        if n_mult < need:
            out.append(f"PRMSE rests on {n_mult} double-scored responses; at least {need} are recommended "
                       f"(Loukina et al. 2020){' when human-human r > 0.65' if need == 500 else ''}")
    p = ts.get("prmse", np.nan)
    if np.isfinite(p) and p > 1:
        out.append(f"PRMSE is {p:.3f} > 1: the double-scored sample is too small to estimate rater error variance")
    return out


def _analytic(h1, m, ov, cats, confidence) -> dict:
    """Fisher-z interval for r; Gwet (2014) linearised-variance intervals for AC, BP and Scott's pi."""
    out = {"corr": fisher_z_ci(ov.get("corr", np.nan), int(ov.get("N", 0)), confidence)}
    if cats is None:
        return out
    pair = np.column_stack([_to_cats(h1, cats), _to_cats(m, cats)])
    ses = quiet(gwet_standard_errors, pair, cats, tuple(_SUFFIX))
    for w, suffix in _SUFFIX.items():
        se = ses[w]
        for key, name in (("gwet_ac1" if w == "identity" else "gwet_ac2" + suffix, "gwet"), ("bp" + suffix, "bp"),
                          ("scott_pi" + suffix, "fleiss")):
            out[key] = normal_ci(ov.get(key, np.nan), se[name], confidence)
    return out


def _multi_rater(h: np.ndarray, cats: np.ndarray) -> tuple[dict, dict]:
    """Chance-corrected agreement among all human columns (R > 2)."""
    hc = np.where(np.isfinite(h), _to_cats(np.nan_to_num(h, nan=cats[0]), cats), np.nan)
    idx = np.where(np.isfinite(hc), np.searchsorted(cats, np.nan_to_num(hc, nan=cats[0])), -1)
    t = agreement_totals(idx, cats.size)
    f = {}
    for w, suffix in _SUFFIX.items():
        for key, coef in (("gwet_ac1" if w == "identity" else "gwet_ac2" + suffix, "gwet"), ("bp" + suffix, "bp"),
                          ("fleiss_kappa" + suffix, "fleiss"), ("conger_kappa" + suffix, "conger")):
            f[key] = (lambda w=w, coef=coef: finish_agreement(t, cats, w, h.shape[1], "", (coef,))[coef])
    coinc = t["coinc"].reshape(cats.size, cats.size)
    for level in ("nominal", "ordinal", "interval"):
        f["krippendorff_alpha_" + level] = (lambda level=level: finish_alpha_from_coincidence(
            coinc, coincidence_delta(cats, level)))
    values, reasons, _ = _point(f)
    return values, reasons


def _dsm(group: dict, whole: dict) -> np.ndarray:
    """DSM of a subgroup: (mean_g M - mean M) / sd M - (mean_g H - mean H) / sd H, the whole evaluation set's
    means and sds (ddof=1), i.e. the group mean of z(M) - z(H) (RSMTool ``difference_of_standardized_means``)."""
    n = whole["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        sd_h = np.sqrt(whole["va"] * n / (n - 1.0))
        sd_m = np.sqrt(whole["vb"] * n / (n - 1.0))
        value = (group["mean_b"] - whole["mean_b"]) / sd_m - (group["mean_a"] - whole["mean_a"]) / sd_h
    value = nan_where(group["n"] < 1, value, "DSM needs at least 1 response in the group")
    return nan_where((group["n"] >= 1) & ((n < 2) | whole["const_a"] | whole["const_b"]), value,
                     "DSM is undefined when the human or system scores of the whole set are constant")


def _fair_json(fa: dict, why: list[str]) -> dict:
    out = {"base_group": fa["base_group"], "groups": fa["groups"]}
    for key in ("osa", "osd", "csd"):
        rec = fa[key]
        item = {}
        for k in ("value", "p_value", "r2"):
            v = rec[k]
            item[k] = None if not np.isfinite(v) else v
            if not np.isfinite(v):
                item[k + "_reason"] = "; ".join(why) or "undefined for these data"
        item["estimates"] = {g: (None if not np.isfinite(c) else c) for g, c in rec["estimates"].items()}
        out[key] = item
    return out
