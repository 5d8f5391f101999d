"""The evaluation pipeline behind ``easl evaluate``: policy, point estimates, bootstrap, assemble.

:func:`evaluate` takes the responses x raters human matrix and the system score vectors and returns a typed
:class:`~core.metrics.results.Evaluation`. It runs four named steps:

1. :func:`prepare` applies the explicit score policy (:func:`core.metrics.data.apply_score_policy`) and fixes the
   scale;
2. :func:`point_estimates` builds one :class:`~core.metrics.suite.PairSuite` per comparison the registry declares
   (system vs reference human, the first two humans, each subgroup) and finishes every metric from their totals;
3. :func:`bootstrap` resamples responses and finishes the same metrics on every resample;
4. :func:`assemble` turns values, reasons and intervals into the result objects.

Which scores and responses each metric uses is declared in :mod:`core.metrics.registry`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from core.metrics.bootstrap import bootstrap_sums, fairness_ci_reason, percentile_interval
from core.metrics.data import PolicyResult, Scale, apply_score_policy
from core.metrics.fairness import FAIRNESS_KEYS, FairnessDesign, fairness_analysis, fairness_design
from core.metrics.intervals import Interval, analytic_intervals
from core.metrics.notes import capture
from core.metrics.moments import finish_disattenuated, finish_dsm, moments
from core.metrics.raters import multi_rater
from core.metrics.registry import OBSERVED_KEYS, TRUE_SCORE_KEYS
from core.metrics.results import (
    Block,
    Evaluation,
    FairnessEvaluation,
    FairnessFigure,
    Figure,
    HumanHuman,
    SystemEvaluation,
)
from core.metrics.suite import PairSuite, batch_values, memo, point_values, round_to_categories
from core.metrics.sums import RowSums
from core.metrics.true_score import finish_true_score, prmse_cautions, true_score_sums, true_score_totals

_TRUE = ("rater_error_variance", "true_score_variance", "mse_true", "prmse")


@dataclass
class Prepared:
    """Step 1's output: the data after the score policy, the scale and its categories, and the notes so far."""

    human: np.ndarray
    system: dict[str, np.ndarray]
    groups: np.ndarray | None
    names: list[str]
    scale: Scale
    cats: np.ndarray | None
    policy: PolicyResult
    n_input: int
    notes: list[str]

    @property
    def n(self) -> int:
        return self.human.shape[0]


@dataclass
class Suites:
    """The comparisons of step 2: one per system, the first two humans, each (subgroup, system)."""

    systems: dict[str, PairSuite]
    human_human: PairSuite | None
    group_labels: list[str]
    groups: dict[tuple[int, str], PairSuite]
    fairness: dict[str, FairnessDesign]
    n: int
    rater_error_variance: float | None
    human: np.ndarray
    system: dict[str, np.ndarray] = field(default_factory=dict)

    def totals(self) -> dict:
        t: dict = {}
        for suite in self._pairs():
            t.update(suite.point_totals())
        for s_name, m in self.system.items():
            t.update(true_score_totals(self.human, m, f"t:{s_name}:"))
        return t

    def sums(self) -> RowSums:
        out = RowSums(self.n)
        for suite in self._pairs():
            out.merge(suite.sums, "")
        for s_name, m in self.system.items():
            out.merge(true_score_sums(self.human, m, f"t:{s_name}:")[0], "")
        return out

    def _pairs(self) -> list[PairSuite]:
        return [*self.systems.values(), *self.groups.values(),
                *([self.human_human] if self.human_human is not None else [])]

    def finishers(self, t: dict, index: np.ndarray | None = None, with_ranks: bool = True) -> dict[str, Callable]:
        """Every figure as ``key -> zero-argument callable`` on totals ``t`` (batch-capable)."""
        f: dict[str, Callable] = {}
        hh_f: dict[str, Callable] = {}
        if self.human_human is not None:
            hh_f = self.human_human.finishers(t)
            if with_ranks:
                hh_f.update(self.human_human.ranks(index))
            hh_f = {k: memo(fn) for k, fn in hh_f.items()}
            f.update({"hh:" + k: fn for k, fn in hh_f.items()})
        for s_name, suite in self.systems.items():
            sf = suite.finishers(t)
            if with_ranks:
                sf.update(suite.ranks(index))
            sf = {k: memo(fn) for k, fn in sf.items()}
            f.update({f"s:{s_name}:{k}": fn for k, fn in sf.items()})
            tsp = f"t:{s_name}:"
            for k in _TRUE:
                f[tsp + k] = (lambda k=k, tsp=tsp: finish_true_score(t, self.rater_error_variance, tsp)[k])
            if self.human_human is not None:
                f[f"s:{s_name}:disattenuated_corr"] = (lambda sf=sf: finish_disattenuated(sf["corr"](), hh_f["corr"]()))
                for k in OBSERVED_KEYS:
                    if k != "N" and k in hh_f:
                        f[f"d:{s_name}:{k}"] = (lambda a=sf[k], b=hh_f[k]: np.asarray(a()) - np.asarray(b()))
        for (gi, s_name), gsuite in self.groups.items():
            gf = gsuite.finishers(t)
            if with_ranks:
                gf.update(gsuite.ranks(index))
            f.update({f"g:{gi}:{s_name}:{k}": fn for k, fn in gf.items()})
            whole = self.systems[s_name]
            f[f"g:{gi}:{s_name}:dsm"] = (lambda gsuite=gsuite, whole=whole: finish_dsm(
                moments(t, gsuite.shift, gsuite.prefix), moments(t, whole.shift, whole.prefix)))
        return f


# ---------------------------------------------------------------------------------------------------------------
# Step 1: policy.

def prepare(human, system: dict, *, human_names, scale: Scale | None, groups, exclude_zeros: bool,
            notes: list[str]) -> Prepared:
    """Apply the score policy, choose the scale (with a note when it comes from the data), note what changed."""
    h_all = np.asarray(human, dtype=np.float64)
    if h_all.ndim == 1:
        h_all = h_all[:, None]
    names = list(human_names) if human_names else [f"h{j + 1}" for j in range(h_all.shape[1])]
    if len(names) != h_all.shape[1]:
        raise ValueError("human_names must name every human column")
    if not system:
        raise ValueError("at least one system score vector is needed")
    policy = apply_score_policy(h_all, system, scale=scale, exclude_zeros=exclude_zeros)
    h = policy.human
    grp = None if groups is None else np.asarray(groups, dtype=object)[policy.keep]
    notes += [f"dropped {count} response(s): {reason}" for reason, count in policy.dropped.items()]
    notes += [f"{count} rating(s): {reason}" for reason, count in policy.changed.items()]
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
        changed = int((round_to_categories(h_obs, cats) != h_obs).sum())
        if changed:
            notes.append(f"{changed} human rating(s) are not on the scale's categories; the categorical metrics use "
                         "them rounded half-to-even and clipped to the scale")
    else:
        notes.append("the scale has no categories: exact/adjacent agreement and the chance-corrected coefficients "
                     "are undefined")
    return Prepared(h, dict(policy.system), grp, names, scale, cats, policy, h_all.shape[0], notes)


# ---------------------------------------------------------------------------------------------------------------
# Step 2: point estimates.

def build_suites(p: Prepared, rater_error_variance: float | None) -> Suites:
    """One comparison per system (reference human vs system), the first two humans, each (subgroup, system)."""
    h, n, cats = p.human, p.n, p.cats
    h1 = h[:, 0]
    rows = np.arange(n)
    systems = {s: PairSuite(f"s:{s}:", h1, m, rows, n, cats, "unpooled") for s, m in p.system.items()}
    hh = None
    if h.shape[1] >= 2:
        hh_rows = np.flatnonzero(np.isfinite(h[:, 0]) & np.isfinite(h[:, 1]))
        hh = PairSuite("hh:", h1, h[:, 1], hh_rows, n, cats, "pooled")
    labels: list[str] = []
    groups: dict[tuple[int, str], PairSuite] = {}
    fair: dict[str, FairnessDesign] = {}
    if p.groups is not None:
        as_text = pd.Series(p.groups).astype(str).to_numpy()
        labels = sorted(set(as_text.tolist()))
        for gi, g in enumerate(labels):
            sel = np.flatnonzero(as_text == g)
            for s, m in p.system.items():
                groups[(gi, s)] = PairSuite(f"g:{gi}:{s}:", h1, m, sel, n, cats, "unpooled")
        fair = {s: fairness_design(h1, m, p.groups) for s, m in p.system.items()}
    return Suites(systems, hh, labels, groups, fair, n, rater_error_variance, h, p.system)


def point_estimates(suites: Suites) -> tuple[dict, dict, dict, list[str]]:
    """(totals, values, reasons, cautions) of every figure on the sample itself."""
    totals = suites.totals()
    values, reasons, cautions = point_values(suites.finishers(totals))
    return totals, values, reasons, cautions


# ---------------------------------------------------------------------------------------------------------------
# Step 3: bootstrap.

def bootstrap(suites: Suites, n_resamples: int, seed: int,
              progress: Callable[[int, int], None] | None) -> dict[str, np.ndarray]:
    """Resample responses ``n_resamples`` times (one seeded generator) and finish every figure on each resample.

    Sums-based figures are batched over each chunk of resamples; Spearman's rho and the fairness analyses are
    vectorised over the chunk's counts; Kendall's tau is recomputed per resample on the same draws.
    """
    rng = np.random.default_rng(seed)
    done = [0]
    hh = suites.human_human

    def prog(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], n_resamples)

    def per_resample(index):
        out = {}
        if hh is not None:
            out["hh:kendall_tau_b"] = hh.ranks(index)["kendall_tau_b"]()
        for s, suite in suites.systems.items():
            out[f"s:{s}:kendall_tau_b"] = suite.ranks(index)["kendall_tau_b"]()
            if hh is not None:
                out[f"d:{s}:kendall_tau_b"] = out[f"s:{s}:kendall_tau_b"] - out["hh:kendall_tau_b"]
        for (gi, s), gsuite in suites.groups.items():
            out[f"g:{gi}:{s}:kendall_tau_b"] = gsuite.ranks(index)["kendall_tau_b"]()
        return out

    def per_chunk(index, counts):
        out = {}
        if hh is not None:
            out["hh:spearman"] = hh.spearman_resampled(counts)
        for s, suite in suites.systems.items():
            out[f"s:{s}:spearman"] = suite.spearman_resampled(counts)
            if hh is not None:
                out[f"d:{s}:spearman"] = out[f"s:{s}:spearman"] - out["hh:spearman"]
        for (gi, s), gsuite in suites.groups.items():
            out[f"g:{gi}:{s}:spearman"] = gsuite.spearman_resampled(counts)
        for s, design in suites.fairness.items():
            if design.problem is None:
                out.update({f"f:{s}:{k}": v for k, v in design.resampled(counts).items()})
        return out

    return bootstrap_sums(suites.sums(), lambda t: batch_values(suites.finishers(t, with_ranks=False)),
                          n_resamples, rng, per_resample=per_resample, progress=prog, per_chunk=per_chunk)


# ---------------------------------------------------------------------------------------------------------------
# Step 4: assemble.

def assemble(p: Prepared, suites: Suites, totals: dict, values: dict, reasons: dict, cautions: list[str],
             samples: dict[str, np.ndarray], *, n_resamples: int, seed: int, confidence: float,
             group_name: str, rater_error_variance: float | None) -> Evaluation:
    """The typed :class:`Evaluation` from the flat values, reasons and bootstrap samples of steps 2 and 3."""
    cis = {k: Interval(*percentile_interval(v, confidence)) for k, v in samples.items()}
    notes = p.notes

    def fig(key: str) -> Figure:
        return Figure(values[key], reasons.get(key), cis.get(key))

    def block(prefix: str, keys) -> Block:
        return Block({k: fig(prefix + k) for k in keys if prefix + k in values})

    h, cats, names = p.human, p.cats, p.names
    hh = suites.human_human
    hh_block = block("hh:", OBSERVED_KEYS) if hh is not None else Block({})
    if hh is None:
        notes.append("one human column: human-human agreement, degradation and the true-score metrics need a "
                     "second rating (or --rater-error-variance)")
    all_raters = multi_rater(h, cats) if h.shape[1] > 2 and cats is not None else None
    human_human = HumanHuman((names[0], names[1]) if hh is not None else None, hh_block, all_raters)

    systems: dict[str, SystemEvaluation] = {}
    prmse_samples: dict[str, np.ndarray] = {}
    for s_name in p.system:
        observed = block(f"s:{s_name}:", OBSERVED_KEYS)
        analytic, order = analytic_intervals(p.human[:, 0], p.system[s_name], observed, cats, confidence)
        observed = Block({k: f._replace(analytic=analytic.get(k)) for k, f in observed.figures.items()})
        counts = {"N": float(totals[f"t:{s_name}:N"]), "N_raters": float(h.shape[1]),
                  "N_single": float(totals[f"t:{s_name}:N_single"]),
                  "N_multiple": float(totals[f"t:{s_name}:N_multiple"])}
        ts = {**{k: Figure(v) for k, v in counts.items()}, **block(f"t:{s_name}:", _TRUE).figures}
        true_score = Block({k: ts[k] for k in TRUE_SCORE_KEYS if k in ts})
        dc_key = f"s:{s_name}:disattenuated_corr"
        dc = fig(dc_key) if dc_key in values else Figure(float("nan"), "needs a second human column")
        new = prmse_cautions(n_multiple=int(counts["N_multiple"]), r_hh=hh_block.value("corr"),
                             prmse=true_score.value("prmse"), external=rater_error_variance is not None)
        cautions.extend(c for c in new if c not in cautions)
        if samples:
            prmse_samples[s_name] = samples.get(f"t:{s_name}:prmse", np.zeros(0))
        systems[s_name] = SystemEvaluation(observed, true_score, block(f"d:{s_name}:", OBSERVED_KEYS), dc, order)

    subgroups: dict = {}
    fairness: dict = {}
    if p.groups is not None:
        subgroups[group_name] = {g: {s: block(f"g:{gi}:{s}:", (*OBSERVED_KEYS, "dsm")) for s in p.system}
                                 for gi, g in enumerate(suites.group_labels)}
        fairness[group_name] = {s: _fairness(p, s, suites.fairness[s], cis, n_resamples, bool(samples))
                                for s in p.system}
    return Evaluation(n_responses=p.n, n_input=p.n_input, dropped=dict(p.policy.dropped), scale=p.scale,
                      human_columns=tuple(names), confidence=confidence, n_resamples=int(n_resamples),
                      seed=int(seed), human_human=human_human, systems=systems, subgroups=subgroups,
                      fairness=fairness, notes=tuple(notes + cautions), human=h, system=p.system,
                      prmse_samples=prmse_samples, bootstrapped=bool(samples))


def _fairness(p: Prepared, s_name: str, design: FairnessDesign, cis: dict, n_resamples: int,
              resampled: bool) -> FairnessEvaluation:
    fa, why, _ = capture(fairness_analysis, p.human[:, 0], p.system[s_name], p.groups)
    reason = "; ".join(why) or None
    figs = {}
    for k in FAIRNESS_KEYS:
        rec = fa[k]
        ci = ci_reason = None
        if n_resamples > 0:
            ci = cis.get(f"f:{s_name}:{k}", Interval(np.nan, np.nan))
            if not ci.is_defined:
                ci_reason = fairness_ci_reason(design.problem if resampled else "the bootstrap needs at least 2 "
                                               "responses", rec["value"], "; ".join(why), n_resamples)
        figs[k] = FairnessFigure(rec["value"], rec["p_value"], rec["r2"], dict(rec["estimates"]), reason, ci,
                                 ci_reason)
    return FairnessEvaluation(fa["base_group"], dict(fa["groups"]), figs["osa"], figs["osd"], figs["csd"],
                              bootstrapped=n_resamples > 0)


# ---------------------------------------------------------------------------------------------------------------

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
    exclude_zeros : bool, default False
        Drop responses whose first human score is 0; other 0 human scores become missing (RSMTool default).
    rater_error_variance : float, optional
        V_e from another sample for the true-score metrics.
    n_bootstrap : int, default 0
        Bootstrap resamples (0: none); percentile intervals at ``confidence``.
    seed : int, default 0
        Seed of the one ``numpy.random.Generator`` used for resampling.
    confidence : float, default 0.95
    progress : callable(done, total), optional
    extra_notes : list of str, optional
        Notes to put first (e.g. from the file reader).

    Returns
    -------
    Evaluation
        Typed results; :meth:`Evaluation.to_json` gives the JSON object of ``easl evaluate --json``.

    References
    ----------
    RSMTool evaluation metrics (rsmtool_evaluation_metrics.md); Loukina et al. (2020), Appendix B (PRMSE);
    Gwet (2014) and Krippendorff (2011) (agreement); Efron & Tibshirani (1993) (bootstrap).

    Examples
    --------
    >>> import numpy as np
    >>> h = np.array([[1, 1], [2, 2], [3, 2], [4, 4], [2, 3], [3, 3.]])
    >>> ev = evaluate(h, {"model": np.array([1.2, 2.1, 2.7, 3.6, 2.4, 3.1])}, scale=Scale(1, 4))
    >>> round(ev.systems["model"].observed["corr"].value, 4)
    0.9731
    """
    notes: list[str] = list(extra_notes or [])
    p = prepare(human, system, human_names=human_names, scale=scale, groups=groups, exclude_zeros=exclude_zeros,
                notes=notes)
    suites = build_suites(p, rater_error_variance)
    totals, values, reasons, cautions = point_estimates(suites)
    samples: dict[str, np.ndarray] = {}
    if n_bootstrap > 0 and p.n >= 2:
        samples = bootstrap(suites, n_bootstrap, seed, progress)
    elif n_bootstrap > 0:
        p.notes.append("bootstrap skipped: it needs at least 2 responses")
    return assemble(p, suites, totals, values, reasons, cautions, samples, n_resamples=n_bootstrap, seed=seed,
                    confidence=confidence, group_name=group_name, rater_error_variance=rater_error_variance)
