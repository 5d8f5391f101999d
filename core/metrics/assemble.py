"""Step 5 of the evaluation pipeline (:mod:`core.metrics.pipeline`): the typed
:class:`~core.metrics.results.Evaluation` from the flat values, reasons and intervals of steps 2-4, with the
confusion matrices and the fairness results (:func:`fairness_result`, shared with the Dask engine's merged cells,
:mod:`core.distributed.fairness_cells`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.metrics.bootstrap import fairness_ci_reason, percentile_interval
from easl_toolkit.core.metrics.estimates.comparisons import TRUE_FIGURES, Comparisons, PointEstimates
from easl_toolkit.core.metrics.estimates.fairness import FAIRNESS_KEYS, fairness_analysis
from easl_toolkit.core.metrics.estimates.fairness_resampled import FairnessDesign
from easl_toolkit.core.metrics.estimates.true_score import prmse_cautions
from easl_toolkit.core.metrics.intervals.analytic import Analytic, Interval
from easl_toolkit.core.metrics.notes import capture
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.prepare import Prepared
from easl_toolkit.core.metrics.registry import ALL_RATERS_COUNTS, OBSERVED_KEYS, TRUE_SCORE_KEYS
from easl_toolkit.core.metrics.results import (
    Block,
    Evaluation,
    FairnessEvaluation,
    FairnessFigure,
    Figure,
    HumanHuman,
    SystemEvaluation,
)


def assemble(
    p: Prepared,
    comp: Comparisons,
    point: PointEstimates,
    closed: dict[str, Analytic],
    samples: dict[str, NDArray[Any]],
    *,
    options: EvaluationOptions,
    group_name: str,
) -> Evaluation:
    """The typed :class:`Evaluation` from the point estimates, the analytic intervals and the bootstrap samples
    (``options``: the bootstrap's resamples, seed and level, the rater error variance, the base group)."""
    n_resamples, seed, confidence = options.n_bootstrap, options.seed, options.confidence
    rater_error_variance, base_group = options.rater_error_variance, options.base_group
    cis = {k: _in_range(k, Interval(*percentile_interval(v, confidence))) for k, v in samples.items()}
    figures = _Figures(point.values, point.reasons, cis, closed)
    cautions = list(point.cautions)
    human_human = _human_human(p, comp, figures)
    systems = {
        s: _system(s, p, point.totals, figures, human_human.pair, rater_error_variance, cautions) for s in p.system
    }
    subgroups: dict[str, dict[str, dict[str, Block]]] = {}
    fairness: dict[str, dict[str, FairnessEvaluation]] = {}
    consistency: dict[str, dict[str, Block]] = {}
    if p.groups is not None:
        labels = comp.group_labels
        subgroups[group_name] = {
            g: {s: figures.block(f"g:{gi}:{s}:", (*OBSERVED_KEYS, "dsm")) for s in p.system}
            for gi, g in enumerate(labels)
        }
        fairness[group_name] = {
            s: _fairness(p, s, comp.fairness[s], cis, n_resamples, bool(samples), base_group) for s in p.system
        }
        if comp.group_consistency:
            consistency[group_name] = {
                labels[gi]: figures.block(f"c:{gi}:", OBSERVED_KEYS) for gi in comp.group_consistency
            }
    q = 0 if p.cats is None else p.cats.size  # RSMTool's confusion matrices: the joint tables of the systems
    confusion = {s: point.totals[f"s:{s}:joint"].reshape(q, q).astype(np.int64) for s in p.system} if q else {}
    return Evaluation(
        n_responses=p.n_reference,
        n_input=p.n_input,
        dropped=dict(p.policy.dropped),
        scale=p.scale,
        human_columns=tuple(p.names),
        confidence=confidence,
        n_resamples=int(n_resamples),
        seed=int(seed),
        human_human=human_human,
        systems=systems,
        subgroups=subgroups,
        fairness=fairness,
        notes=tuple(p.notes + cautions),
        human=p.human[p.reference],
        system={s: v[p.reference] for s, v in p.system.items()},
        prmse_samples={s: samples.get(f"t:{s}:prmse", np.zeros(0)) for s in p.system} if samples else {},
        bootstrapped=bool(samples),
        consistency_by_group=consistency,
        confusion=confusion,
    )


#: Figures whose bootstrap interval is cut to the figure's range. The disattenuated correlation, r(H, M) /
#: sqrt(r(H1, H2)), estimates a correlation with the true score (range [-1, 1]) as a ratio of two estimates, so
#: resamples with a small human-human r pass 1; its percentile interval is clipped to [-1, 1] (a bound that
#: cannot be reached says nothing more than 1 does). The point estimate is left as computed (RSMTool's).
INTERVAL_RANGES: dict[str, tuple[float, float]] = {"disattenuated_corr": (-1.0, 1.0)}


def _in_range(key: str, ci: Interval) -> Interval:
    """``ci`` of the flat figure ``key`` (``s:model:disattenuated_corr``) cut to :data:`INTERVAL_RANGES`."""
    bounds = INTERVAL_RANGES.get(key.rsplit(":", 1)[-1])
    if bounds is None or not ci.is_defined:
        return ci
    lo, hi = bounds
    return ci._replace(low=min(max(ci.low, lo), hi), high=min(max(ci.high, lo), hi))


class _Figures(NamedTuple):
    """The flat figures of one evaluation by key (``s:model:corr``, ``hh:qwk``, ...) with their reasons and
    intervals."""

    values: dict[str, float]
    reasons: dict[str, str]
    cis: dict[str, Interval]
    closed: dict[str, Analytic]

    def figure(self, key: str) -> Figure:
        return Figure(self.values[key], self.reasons.get(key), self.cis.get(key), self.closed.get(key))

    def block(self, prefix: str, keys: Iterable[str]) -> Block:
        return Block({k: self.figure(prefix + k) for k in keys if prefix + k in self.values})


def _human_human(p: Prepared, comp: Comparisons, figures: _Figures) -> HumanHuman:
    """The first two human columns compared (a note when there is one) and the all-raters block."""
    names = p.names
    if comp.human_human is None:
        p.notes.append(
            "one human column: human-human agreement, degradation and the true-score metrics need a "
            "second rating (or a rater error variance from another sample)"
        )
    pair = figures.block("hh:", OBSERVED_KEYS) if comp.human_human is not None else Block({})
    all_raters = None
    if comp.raters is not None:
        all_raters = Block(
            {
                **{k: figures.figure("a:" + k) for k in ALL_RATERS_COUNTS if "a:" + k in figures.values},
                "N_raters": Figure(float(p.human.shape[1])),
                **figures.block("a:", comp.all_raters_keys()).figures,
            }
        )
    return HumanHuman((names[0], names[1]) if comp.human_human is not None else None, pair, all_raters, tuple(names))


def _system(
    s_name: str,
    p: Prepared,
    totals: dict[str, NDArray[Any]],
    figures: _Figures,
    hh_block: Block,
    rater_error_variance: float | None,
    cautions: list[str],
) -> SystemEvaluation:
    """One system's observed, true-score and degradation blocks; the PRMSE cautions go to ``cautions``."""
    counts: dict[str, NDArray[Any] | float] = {
        "N": totals[f"t:{s_name}:N"],
        "N_raters": float(p.human.shape[1]),
        "N_single": totals[f"t:{s_name}:N_single"],
        "N_multiple": totals[f"t:{s_name}:N_multiple"],
    }
    ts = {**{k: Figure(float(v)) for k, v in counts.items()}, **figures.block(f"t:{s_name}:", TRUE_FIGURES).figures}
    true_score = Block({k: ts[k] for k in TRUE_SCORE_KEYS if k in ts})
    dc_key = f"s:{s_name}:disattenuated_corr"
    dc = figures.figure(dc_key) if dc_key in figures.values else Figure(float("nan"), "needs a second human column")
    new = prmse_cautions(
        n_multiple=int(counts["N_multiple"]),
        r_hh=hh_block.value("corr"),
        prmse=true_score.value("prmse"),
        external=rater_error_variance is not None,
    )
    cautions.extend(c for c in new if c not in cautions)
    observed = figures.block(f"s:{s_name}:", OBSERVED_KEYS)
    return SystemEvaluation(observed, true_score, figures.block(f"d:{s_name}:", OBSERVED_KEYS), dc)


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
        figs[k] = FairnessFigure(reason=reason, ci=ci, ci_reason=ci_reason, **rec)  # value, p_value, r2, estimates*
    osa, osd, csd = (figs[k] for k in FAIRNESS_KEYS)
    return FairnessEvaluation(fa["base_group"], dict(fa["groups"]), osa, osd, csd, bootstrapped=n_resamples > 0, n=n)
