"""The evaluation pipeline behind ``easl evaluate``: policy, point estimates, analytic intervals, bootstrap, assemble.

:func:`evaluate` takes the responses x raters human matrix and the system score vectors and returns a typed
:class:`~core.metrics.results.Evaluation` in five named steps:

1. :func:`prepare` applies the explicit score policy (:func:`core.metrics.data.apply_score_policy`) per rating,
   marks the responses of the comparisons with the first human column, and fixes the scale;
2. :func:`point_estimates` builds the comparisons the registry declares (:mod:`core.metrics.comparisons`, each on
   its own responses and raters) and finishes every metric from their totals;
3. :func:`analytic` adds the closed-form standard errors, intervals and p-values (:mod:`core.metrics.intervals`,
   :mod:`core.metrics.agreement_variance`);
4. :func:`bootstrap` resamples responses and finishes the same metrics on every resample;
5. :func:`assemble` turns values, reasons and intervals into the result objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core.metrics.agreement_variance import REPORT_WEIGHTS, named_inference
from core.metrics.bootstrap import bootstrap_sums, fairness_ci_reason, percentile_interval
from core.metrics.comparisons import TRUE_FIGURES, Comparisons, build
from core.metrics.data import WEIGHTS, PolicyResult, Scale, Weights, apply_score_policy, check_option
from core.metrics.fairness import FAIRNESS_KEYS, FairnessDesign, fairness_analysis
from core.metrics.intervals import T_METHOD, Analytic, Interval, pearson_analytic
from core.metrics.notes import capture
from core.metrics.registry import ALL_RATERS_COUNTS, OBSERVED_KEYS, TRUE_SCORE_KEYS
from core.metrics.results import (
    Block,
    Evaluation,
    FairnessEvaluation,
    FairnessFigure,
    Figure,
    HumanHuman,
    SystemEvaluation,
)
from core.metrics.suite import PairSuite, batch_values, point_values, round_to_categories
from core.metrics.true_score import prmse_cautions


@dataclass
class Prepared:
    """Step 1's output over the responses with at least one human rating (the rows of every comparison)."""

    human: NDArray[Any]  # (n, R) after the per-rating policy
    system: dict[str, NDArray[Any]]  # name -> (n,), NaN where missing
    reference: NDArray[Any]  # (n,) bool: compared with the first human column
    system_ok: NDArray[Any]  # (n,) bool: every system score present
    groups: NDArray[Any] | None
    names: list[str]
    scale: Scale
    cats: NDArray[Any] | None
    policy: PolicyResult
    n_input: int
    notes: list[str]

    @property
    def n_reference(self) -> int:
        return int(self.reference.sum())


# ---------------------------------------------------------------------------------------------------------------
# Step 1: policy.


def prepare(
    human: ArrayLike,
    system: dict[str, NDArray[Any]],
    *,
    human_names: Sequence[str] | None,
    scale: Scale | None,
    groups: ArrayLike | None,
    exclude_zeros: bool,
    notes: list[str],
) -> Prepared:
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
    rated = np.isfinite(policy.ratings).any(axis=1)
    h = policy.ratings[rated]
    grp = None if groups is None else np.asarray(groups, dtype=object)[rated]
    notes += [
        f"{count} response(s) left out of the comparisons with the first human column: {reason}"
        for reason, count in policy.dropped.items()
    ]
    notes += [f"{count} rating(s): {reason}" for reason, count in policy.changed.items()]
    if scale is None:
        finite = h[np.isfinite(h)]
        if finite.size and finite.max() > finite.min():
            scale = Scale(float(np.floor(finite.min())), float(np.ceil(finite.max())))
            notes.append(
                f"no scale given: using [{scale.min:g}, {scale.max:g}] from the human scores; give the "
                "scale explicitly, the categorical coefficients depend on it"
            )
        else:
            lo = float(finite.min()) if finite.size else 0.0
            scale = Scale(lo, lo + 1.0)
            notes.append("no scale given and the human scores do not vary: using a two-point scale")
    cats = scale.category_array if scale.is_categorical else None
    if cats is not None:
        h_obs = h[np.isfinite(h)]
        changed = int((round_to_categories(h_obs, cats) != h_obs).sum())
        if changed:
            notes.append(
                f"{changed} human rating(s) are not on the scale's categories; the categorical metrics use "
                "them rounded half-to-even and clipped to the scale"
            )
    else:
        notes.append(
            "the scale has no categories: exact/adjacent agreement and the chance-corrected coefficients are undefined"
        )
    return Prepared(
        h,
        {s: v[rated] for s, v in policy.system_all.items()},
        policy.keep[rated],
        policy.system_ok[rated],
        grp,
        names,
        scale,
        cats,
        policy,
        h_all.shape[0],
        notes,
    )


# ---------------------------------------------------------------------------------------------------------------
# Step 2: point estimates.


def point_estimates(
    p: Prepared, rater_error_variance: float | None, weightings: tuple[Weights, ...] = REPORT_WEIGHTS
) -> tuple[Comparisons, dict[str, NDArray[Any]], dict[str, float], dict[str, str], list[str]]:
    """(comparisons, totals, values, reasons, cautions) of every figure on the sample itself."""
    comp = build(
        p.human,
        p.system,
        reference=p.reference,
        system_ok=p.system_ok,
        cats=p.cats,
        groups=p.groups,
        rater_error_variance=rater_error_variance,
        weightings=weightings,
    )
    totals = comp.totals()
    values, reasons, cautions = point_values(comp.finishers(totals))
    return comp, totals, values, reasons, cautions


# ---------------------------------------------------------------------------------------------------------------
# Step 3: analytic intervals.


def analytic(
    p: Prepared, comp: Comparisons, values: dict[str, float], *, confidence: float, population_size: float | None
) -> dict[str, Analytic]:
    """Closed-form intervals keyed like ``values``: Fisher z for r; Gwet's linearised standard errors with t
    intervals (irrCAC) for every chance-corrected coefficient of the pairwise and all-raters blocks."""
    out: dict[str, Analytic] = {}

    def pair(prefix: str, suite: PairSuite) -> None:
        out[prefix + "corr"] = pearson_analytic(values.get(prefix + "corr", np.nan), int(suite.rows.size), confidence)
        index = suite.category_index()
        if index is not None and comp.cats is not None:  # (a pair has a category index only with categories)
            out.update(_inference(prefix, index, comp.cats, confidence, population_size))

    for s, suite in comp.systems.items():
        pair(f"s:{s}:", suite)
    if comp.human_human is not None:
        pair("hh:", comp.human_human)
    if comp.raters is not None and comp.cats is not None:
        out.update(_inference("a:", comp.raters, comp.cats, confidence, population_size, comp.weightings))
    return out


def _inference(
    prefix: str,
    index: NDArray[Any],
    cats: NDArray[Any],
    confidence: float,
    population_size: float | None,
    weightings: tuple[Weights, ...] = REPORT_WEIGHTS,
) -> dict[str, Analytic]:
    res = named_inference(index, cats, confidence=confidence, population_size=population_size, weightings=weightings)
    return {prefix + k: Analytic(v.se, v.low, v.high, v.p_value, T_METHOD) for k, v in res.items()}


# ---------------------------------------------------------------------------------------------------------------
# Step 4: bootstrap.


def bootstrap(
    comp: Comparisons, n_resamples: int, seed: int, progress: Callable[[int, int], None] | None
) -> dict[str, NDArray[Any]]:
    """Resample responses ``n_resamples`` times (one seeded generator) and finish every figure on each resample.

    Sums-based figures are batched over each chunk of resamples; Spearman's rho and the fairness analyses are
    vectorised over the chunk's counts; Kendall's tau is recomputed per resample on the same draws.
    """
    rng = np.random.default_rng(seed)
    done = [0]

    def prog(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], n_resamples)

    return bootstrap_sums(
        comp.sums(),
        lambda t: batch_values(comp.finishers(t, with_ranks=False)),
        n_resamples,
        rng,
        per_resample=comp.per_resample,
        progress=prog,
        per_chunk=comp.per_chunk,
    )


# ---------------------------------------------------------------------------------------------------------------
# Step 5: assemble.


def assemble(
    p: Prepared,
    comp: Comparisons,
    totals: dict[str, NDArray[Any]],
    values: dict[str, float],
    reasons: dict[str, str],
    cautions: list[str],
    closed: dict[str, Analytic],
    samples: dict[str, NDArray[Any]],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    group_name: str,
    rater_error_variance: float | None,
    base_group: str | None = None,
) -> Evaluation:
    """The typed :class:`Evaluation` from the flat values, reasons and intervals of steps 2-4."""
    cis = {k: Interval(*percentile_interval(v, confidence)) for k, v in samples.items()}
    notes, names, h = p.notes, p.names, p.human

    def fig(key: str) -> Figure:
        return Figure(values[key], reasons.get(key), cis.get(key), closed.get(key))

    def block(prefix: str, keys: Iterable[str]) -> Block:
        return Block({k: fig(prefix + k) for k in keys if prefix + k in values})

    hh = comp.human_human
    hh_block = block("hh:", OBSERVED_KEYS) if hh is not None else Block({})
    if hh is None:
        notes.append(
            "one human column: human-human agreement, degradation and the true-score metrics need a "
            "second rating (or a rater error variance from another sample)"
        )
    all_raters = None
    if comp.raters is not None:
        all_raters = Block(
            {
                **{k: fig("a:" + k) for k in ALL_RATERS_COUNTS if "a:" + k in values},
                "N_raters": Figure(float(h.shape[1])),
                **block("a:", comp.all_raters_keys()).figures,
            }
        )
    human_human = HumanHuman((names[0], names[1]) if hh is not None else None, hh_block, all_raters, tuple(names))
    systems: dict[str, SystemEvaluation] = {}
    prmse_samples: dict[str, NDArray[Any]] = {}
    for s_name in p.system:
        observed = block(f"s:{s_name}:", OBSERVED_KEYS)
        counts: dict[str, NDArray[Any] | float] = {
            "N": totals[f"t:{s_name}:N"],
            "N_raters": float(h.shape[1]),
            "N_single": totals[f"t:{s_name}:N_single"],
            "N_multiple": totals[f"t:{s_name}:N_multiple"],
        }
        ts = {**{k: Figure(float(v)) for k, v in counts.items()}, **block(f"t:{s_name}:", TRUE_FIGURES).figures}
        true_score = Block({k: ts[k] for k in TRUE_SCORE_KEYS if k in ts})
        dc_key = f"s:{s_name}:disattenuated_corr"
        dc = fig(dc_key) if dc_key in values else Figure(float("nan"), "needs a second human column")
        new = prmse_cautions(
            n_multiple=int(counts["N_multiple"]),
            r_hh=hh_block.value("corr"),
            prmse=true_score.value("prmse"),
            external=rater_error_variance is not None,
        )
        cautions.extend(c for c in new if c not in cautions)
        if samples:
            prmse_samples[s_name] = samples.get(f"t:{s_name}:prmse", np.zeros(0))
        degradation = block(f"d:{s_name}:", OBSERVED_KEYS)
        systems[s_name] = SystemEvaluation(observed, true_score, degradation, dc)

    subgroups: dict[str, dict[str, dict[str, Block]]] = {}
    fairness: dict[str, dict[str, FairnessEvaluation]] = {}
    consistency: dict[str, dict[str, Block]] = {}
    if p.groups is not None:
        subgroups[group_name] = {
            g: {s: block(f"g:{gi}:{s}:", (*OBSERVED_KEYS, "dsm")) for s in p.system}
            for gi, g in enumerate(comp.group_labels)
        }
        fairness[group_name] = {
            s: _fairness(p, s, comp.fairness[s], cis, n_resamples, bool(samples), base_group) for s in p.system
        }
        if comp.group_consistency:
            consistency[group_name] = {
                comp.group_labels[gi]: block(f"c:{gi}:", OBSERVED_KEYS) for gi in comp.group_consistency
            }
    return Evaluation(
        n_responses=p.n_reference,
        n_input=p.n_input,
        dropped=dict(p.policy.dropped),
        scale=p.scale,
        human_columns=tuple(names),
        confidence=confidence,
        n_resamples=int(n_resamples),
        seed=int(seed),
        human_human=human_human,
        systems=systems,
        subgroups=subgroups,
        fairness=fairness,
        notes=tuple(notes + cautions),
        human=h[p.reference],
        system={s: v[p.reference] for s, v in p.system.items()},
        prmse_samples=prmse_samples,
        bootstrapped=bool(samples),
        consistency_by_group=consistency,
        confusion={s: _confusion(comp, s) for s in p.system} if p.cats is not None else {},
    )


def _confusion(comp: Comparisons, s_name: str) -> NDArray[Any]:
    """Counts of (reference human category, system category) on the reference responses (RSMTool's confusion
    matrix), on the scores rounded to the scale."""
    cats, index = comp.cats, comp.systems[s_name].category_index()
    assert cats is not None and index is not None, "the confusion matrix needs the scale's categories"
    q = cats.size
    return np.bincount(index[:, 0] * q + index[:, 1], minlength=q * q).reshape(q, q)


def _fairness(
    p: Prepared,
    s_name: str,
    design: FairnessDesign,
    cis: dict[str, Interval],
    n_resamples: int,
    resampled: bool,
    base_group: str | None,
) -> FairnessEvaluation:
    ref, groups = p.reference, p.groups
    assert groups is not None, "the fairness analyses need the subgroup labels"
    fa, why, _ = capture(fairness_analysis, p.human[ref, 0], p.system[s_name][ref], groups[ref], base_group=base_group)
    return fairness_result(
        fa,
        why,
        cis={k: cis[f"f:{s_name}:{k}"] for k in FAIRNESS_KEYS if f"f:{s_name}:{k}" in cis},
        n_resamples=n_resamples,
        problem=design.problem if resampled else "the bootstrap needs at least 2 responses",
        n=int(ref.sum()),
    )


def fairness_result(
    fa: dict[str, Any],
    why: list[str],
    *,
    cis: dict[str, Interval],
    n_resamples: int,
    problem: str | None,
    n: int,
) -> FairnessEvaluation:
    """The :class:`FairnessEvaluation` of one system from a fairness analysis (:func:`fairness_analysis`, or its
    merged-cells form in :mod:`core.distributed.fairness_cells`), the reasons it gave (``why``) and the bootstrap
    intervals by figure (``osa``, ``osd``, ``csd``; a missing one is undefined, with the reason
    :func:`~core.metrics.bootstrap.fairness_ci_reason` gives from the design ``problem``)."""
    reason = "; ".join(why) or None
    figs: dict[str, FairnessFigure] = {}
    for k in FAIRNESS_KEYS:
        rec = fa[k]
        ci = ci_reason = None
        if n_resamples > 0:
            ci = cis.get(k, Interval(np.nan, np.nan))
            if not ci.is_defined:
                ci_reason = fairness_ci_reason(problem, rec["value"], "; ".join(why), n_resamples)
        figs[k] = FairnessFigure(
            rec["value"],
            rec["p_value"],
            rec["r2"],
            dict(rec["estimates"]),
            reason,
            ci,
            ci_reason,
            dict(rec["estimates_p_value"]),
            dict(rec["estimates_ci"]),
        )
    return FairnessEvaluation(
        fa["base_group"],
        dict(fa["groups"]),
        figs["osa"],
        figs["osd"],
        figs["csd"],
        bootstrapped=n_resamples > 0,
        n=n,
    )


# ---------------------------------------------------------------------------------------------------------------


def evaluate(
    human: ArrayLike,
    system: dict[str, NDArray[Any]],
    *,
    human_names: list[str] | None = None,
    scale: Scale | None = None,
    groups: ArrayLike | None = None,
    group_name: str = "group",
    exclude_zeros: bool = False,
    rater_error_variance: float | None = None,
    n_bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    population_size: float | None = None,
    base_group: str | None = None,
    weights: tuple[Weights, ...] = (),
    progress: Callable[[int, int], None] | None = None,
    extra_notes: list[str] | None = None,
) -> Evaluation:
    """Every metric for every system against the human ratings, with reasons, cautions and intervals.

    Each metric uses the responses and raters it declares (:mod:`core.metrics.registry`): the comparisons with
    the first human column drop responses without that score (RSMTool), the agreement among all raters and the
    true-score metrics keep every rated response.

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
        0 is not a score: responses whose first human score is 0 leave the comparisons with the first human
        column, other 0 ratings become missing (RSMTool's default).
    rater_error_variance : float, optional
        V_e from another sample for the true-score metrics.
    n_bootstrap : int, default 0
        Bootstrap resamples (0: none); percentile intervals at ``confidence``.
    seed : int, default 0
        Seed of the one ``numpy.random.Generator`` used for resampling.
    confidence : float, default 0.95
    weights : tuple of str, default ()
        More weightings for the all-raters coefficients beside identity, linear and quadratic (irrCAC's
        ``ordinal``, ``radical``, ``ratio``, ``circular``, ``bipolar``); ``ratio`` needs categories other than 0.
    base_group : str, optional
        Reference level of the fairness models' group coefficients (RSMTool's ``base_group``; default the
        largest group).
    population_size : float, optional
        Number of responses in the population, for the finite-population correction of the analytic standard
        errors of the chance-corrected coefficients (Gwet 2014, section 5.3; irrCAC's ``N``).
    progress : callable(done, total), optional
    extra_notes : list of str, optional
        Notes to put first (e.g. from the file reader).

    Returns
    -------
    Evaluation
        Typed results; :meth:`Evaluation.to_json` gives the JSON object of ``easl evaluate --json``.

    References
    ----------
    RSMTool documentation, "Evaluation metrics" (docs/design.md section 4.2); Loukina et al. (2020), Appendix B (PRMSE);
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
    p = prepare(
        human, system, human_names=human_names, scale=scale, groups=groups, exclude_zeros=exclude_zeros, notes=notes
    )
    for w in weights:
        check_option("weights", w, WEIGHTS)
    if "ratio" in weights and p.cats is not None and (p.cats == 0).any():
        raise ValueError("ratio weights need categories other than 0")
    weightings = REPORT_WEIGHTS + tuple(w for w in dict.fromkeys(weights) if w not in REPORT_WEIGHTS)
    comp, totals, values, reasons, cautions = point_estimates(p, rater_error_variance, weightings)
    closed = analytic(p, comp, values, confidence=confidence, population_size=population_size)
    samples: dict[str, NDArray[Any]] = {}
    if n_bootstrap > 0 and p.n_reference >= 2:
        samples = bootstrap(comp, n_bootstrap, seed, progress)
    elif n_bootstrap > 0:
        p.notes.append("bootstrap skipped: it needs at least 2 responses")
    return assemble(
        p,
        comp,
        totals,
        values,
        reasons,
        cautions,
        closed,
        samples,
        n_resamples=n_bootstrap,
        seed=seed,
        confidence=confidence,
        group_name=group_name,
        rater_error_variance=rater_error_variance,
        base_group=base_group,
    )
