"""Step 5 of the evaluation pipeline (:mod:`core.metrics.pipeline`): the typed
:class:`~core.metrics.results.Evaluation` from the flat values, reasons and intervals of steps 2-4, with the
confusion matrices and the fairness results (:func:`fairness_result`, shared with the Dask engine's merged cells,
:mod:`core.distributed.fairness_cells`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from core.metrics.bootstrap import fairness_ci_reason, percentile_interval
from core.metrics.estimates.comparisons import TRUE_FIGURES, Comparisons
from core.metrics.estimates.fairness import FAIRNESS_KEYS, fairness_analysis
from core.metrics.estimates.fairness_resampled import FairnessDesign
from core.metrics.estimates.true_score import prmse_cautions
from core.metrics.intervals.analytic import Analytic, Interval
from core.metrics.notes import capture
from core.metrics.prepare import Prepared
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
