"""The comparisons one evaluation makes, each on the responses and raters its metrics declare
(:mod:`core.metrics.registry`), as sufficient statistics over one row universe (every response with at least one
human rating), so that the point estimates and every bootstrap resample share the same rows: system vs reference
human, the first two humans (responses with both scores), all raters (every rated response, every human column),
true scores (rated responses with every system score) and each subgroup (its reference responses).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.metrics.data import Weights, category_index, round_to_categories
from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_sums, rating_patterns
from easl_toolkit.core.metrics.estimates.fairness_resampled import FairnessDesign, fairness_design
from easl_toolkit.core.metrics.estimates.pair import Finisher, PairSuite, agreement_finishers, memo, point_values
from easl_toolkit.core.metrics.estimates.sums import RowSums, finish_disattenuated, finish_dsm, moments
from easl_toolkit.core.metrics.estimates.true_score import TrueScoreTotals, finish_true_score, true_score_sums
from easl_toolkit.core.metrics.prepare import Prepared
from easl_toolkit.core.metrics.registry import OBSERVED_KEYS, REPORT_WEIGHTS, report_name

KENDALL_KEYS = ("kendall_tau_b", "kendall_tau_c")
TRUE_FIGURES = ("rater_error_variance", "true_score_variance", "mse_true", "prmse")
#: Krippendorff's levels in the all-raters block (ratio too: every rating is compared with every other).
ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _pattern_tables(index: NDArray[Any], q: int, prefix: str) -> tuple[NDArray[Any], dict[str, NDArray[Any]]]:
    """Each response's rating pattern and the all-raters sums (``agreement_sums``) per pattern: a resample's totals
    then cost one aggregation by pattern, not one entry per rating pair."""
    rows, _, inverse = rating_patterns(index, q, return_inverse=True)
    return inverse, agreement_sums(rows, q, prefix).per_row()


@dataclass
class Comparisons:
    """Every comparison of one evaluation over ``n`` rows (the responses with at least one human rating)."""

    n: int
    systems: dict[str, PairSuite]
    human_human: PairSuite | None
    group_labels: list[str]
    groups: dict[tuple[int, str], PairSuite]
    fairness: dict[str, FairnessDesign]
    reference_rows: NDArray[Any]
    rater_error_variance: float | None
    true_human: NDArray[Any]  # ratings of the true-score responses (NaN rows elsewhere)
    true_system: dict[str, NDArray[Any]] = field(default_factory=dict)
    raters: NDArray[Any] | None = None  # (n, R) category index of every rating (all-raters block)
    cats: NDArray[Any] | None = None
    group_consistency: dict[int, PairSuite] = field(default_factory=dict)  # first two humans in each subgroup
    weightings: tuple[Weights, ...] = REPORT_WEIGHTS  # of the all-raters block

    def all_raters_keys(self) -> list[str]:
        """The all-raters figures in report order: each coefficient under each weighting, then alpha's levels."""
        keys = [report_name(c, w) for c in ("gwet", "bp", "fleiss", "conger") for w in self.weightings]
        return [k for k in keys if k] + ["krippendorff_alpha_" + lv for lv in ALPHA_LEVELS]

    @functools.cached_property
    def sums(self) -> RowSums:
        """The per-response terms of every figure (``sums.totals()``: the sample's totals)."""
        out = RowSums(self.n)
        for suite in self._pairs():
            out.merge(suite.sums)
        for s, m in self.true_system.items():
            out.merge(true_score_sums(self.true_human, m, f"t:{s}:")[0])
        if self.raters is not None and self.cats is not None:  # (raters are set only with categories)
            out.add_grouped(*_pattern_tables(self.raters, self.cats.size, "a:"))
        return out

    def _pairs(self) -> list[PairSuite]:
        return [
            *self.systems.values(),
            *self.groups.values(),
            *self.group_consistency.values(),
            *([self.human_human] if self.human_human is not None else []),
        ]

    def finishers(
        self, t: dict[str, NDArray[Any]], index: NDArray[Any] | None = None, with_ranks: bool = True
    ) -> dict[str, Finisher]:
        """Every figure as ``key -> zero-argument callable`` on totals ``t`` (batch-capable)."""

        def true_figure(k: str, tsp: str) -> Finisher:
            return lambda: finish_true_score(TrueScoreTotals.of(t, tsp), self.rater_error_variance)[k]

        def disattenuated(sf: dict[str, Finisher]) -> Finisher:
            return lambda: finish_disattenuated(sf["corr"](), hh_f["corr"]())

        def difference(a: Finisher, b: Finisher) -> Finisher:
            return lambda: np.asarray(a()) - np.asarray(b())

        def dsm(gsuite: PairSuite, whole: PairSuite) -> Finisher:
            return lambda: finish_dsm(moments(t, gsuite.shift, gsuite.prefix), moments(t, whole.shift, whole.prefix))

        def of(suite: PairSuite, shared: bool = False) -> dict[str, Finisher]:
            sf = suite.finishers(t)
            if with_ranks:
                sf.update(suite.ranks(index))
            return {k: memo(fn) for k, fn in sf.items()} if shared else sf  # shared: also used by d: and dc

        hh_f = of(self.human_human, shared=True) if self.human_human is not None else {}
        f = {"hh:" + k: fn for k, fn in hh_f.items()}
        for s_name, suite in self.systems.items():
            sf = of(suite, shared=True)
            f.update({suite.prefix + k: fn for k, fn in sf.items()})
            tsp = f"t:{s_name}:"
            for k in TRUE_FIGURES:
                f[tsp + k] = true_figure(k, tsp)
            if self.human_human is not None:
                f[f"s:{s_name}:disattenuated_corr"] = disattenuated(sf)
                for k in OBSERVED_KEYS:
                    if k != "N" and k in hh_f:
                        f[f"d:{s_name}:{k}"] = difference(sf[k], hh_f[k])
        for (_, s_name), gsuite in self.groups.items():
            f.update({gsuite.prefix + k: fn for k, fn in of(gsuite).items()})
            f[gsuite.prefix + "dsm"] = dsm(gsuite, self.systems[s_name])
        for csuite in self.group_consistency.values():
            f.update({csuite.prefix + k: fn for k, fn in of(csuite).items()})
        if self.raters is not None and self.cats is not None:
            f.update(self._all_raters(t, self.raters.shape[1], self.cats))
        return f

    def _all_raters(self, t: dict[str, NDArray[Any]], n_raters: int, cats: NDArray[Any]) -> dict[str, Finisher]:
        coefficients = ("gwet", "bp", "fleiss", "conger")
        named = agreement_finishers(lambda: t, cats, n_raters, "a:", self.weightings, coefficients, ALPHA_LEVELS)
        f: dict[str, Finisher] = {"a:N": lambda: t["a:n_rated"], "a:N_pairable": lambda: t["a:n2"]}
        return f | {"a:" + k: fn for k, fn in named.items()}

    def differences(self, out: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
        """``out`` with ``d:<system>:<key>``, the system's figure minus the human-human one, where ``out`` has both."""
        for s, k in itertools.product(self.systems if self.human_human is not None else (), keys):
            if f"s:{s}:{k}" in out and "hh:" + k in out:
                out[f"d:{s}:{k}"] = out[f"s:{s}:{k}"] - out["hh:" + k]
        return out

    def per_resample(self, index: NDArray[Any]) -> dict[str, float]:
        """Kendall's tau-b and tau-c of every comparison on one resample (``index``: the rows drawn)."""
        out: dict[str, float] = {}
        # (human-human consistency by group: Spearman is resampled, Kendall is not, to keep the bootstrap's time)
        hh = [self.human_human] if self.human_human is not None else []
        for suite in [*self.systems.values(), *self.groups.values(), *hh]:
            ranks = suite.ranks(index)
            out.update({suite.prefix + k: ranks[k]() for k in KENDALL_KEYS})
        return self.differences(out, KENDALL_KEYS)

    def per_chunk(self, index: NDArray[Any], counts: NDArray[Any]) -> dict[str, NDArray[Any]]:
        """Spearman's rho and the fairness analyses, vectorised over a chunk of resamples."""
        out = {suite.prefix + "spearman": suite.spearman_resampled(counts) for suite in self._pairs()}
        self.differences(out, ("spearman",))
        ref_counts = counts[:, self.reference_rows]
        for s, design in self.fairness.items():
            if design.problem is None:
                out.update({f"f:{s}:{k}": v for k, v in design.resampled(ref_counts).items()})
        return out


def build(
    p: Prepared, *, rater_error_variance: float | None, weightings: tuple[Weights, ...] = REPORT_WEIGHTS
) -> Comparisons:
    """The comparisons of an evaluation over the rows of ``p.human`` (every row has at least one rating).

    ``p.reference`` marks the responses of the comparisons with the first human column, ``p.system_ok`` those
    with every system score.
    """
    human, system, reference, system_ok, cats, groups = p.human, p.system, p.reference, p.system_ok, p.cats, p.groups
    n = human.shape[0]
    h1 = human[:, 0]
    ref_rows = np.flatnonzero(reference)
    systems = {s: PairSuite(f"s:{s}:", h1, m, ref_rows, n, cats, "unpooled") for s, m in system.items()}
    hh = None
    if human.shape[1] >= 2:
        hh_rows = np.flatnonzero(np.isfinite(h1) & np.isfinite(human[:, 1]))
        hh = PairSuite("hh:", h1, human[:, 1], hh_rows, n, cats, "pooled")
    labels: list[str] = []
    group_suites: dict[tuple[int, str], PairSuite] = {}
    consistency: dict[int, PairSuite] = {}
    fair: dict[str, FairnessDesign] = {}
    if groups is not None:
        as_text = pd.Series(groups).astype(str).to_numpy()
        labels = sorted(set(as_text[reference].tolist()))
        for gi, g in enumerate(labels):
            sel = np.flatnonzero((as_text == g) & reference)
            for s, m in system.items():
                group_suites[(gi, s)] = PairSuite(f"g:{gi}:{s}:", h1, m, sel, n, cats, "unpooled")
            if hh is not None:
                both = np.intersect1d(np.flatnonzero(as_text == g), hh.rows)
                consistency[gi] = PairSuite(f"c:{gi}:", h1, human[:, 1], both, n, cats, "pooled")
        fair = {s: fairness_design(h1[ref_rows], m[ref_rows], groups[ref_rows]) for s, m in system.items()}
    true_human = np.where(system_ok[:, None], human, np.nan)
    true_system = {s: np.where(system_ok, m, 0.0) for s, m in system.items()}
    raters = None  # every rating rounded to the scale's categories, as a category index (-1 = missing)
    if cats is not None and human.shape[1] >= 2:
        raters = category_index(round_to_categories(human, cats), cats)
    return Comparisons(
        n,
        systems,
        hh,
        labels,
        group_suites,
        fair,
        ref_rows,
        rater_error_variance,
        true_human,
        true_system,
        raters,
        cats,
        consistency,
        weightings,
    )


class PointEstimates(NamedTuple):
    """Every figure on the sample itself: the totals of the comparisons, the values, the reasons of the undefined
    values (by key) and the cautions."""

    totals: dict[str, NDArray[Any]]
    values: dict[str, float]
    reasons: dict[str, str]
    cautions: list[str]


def point_estimates(comp: Comparisons) -> PointEstimates:
    """Finish every figure of ``comp`` from the totals of the sample (the same finishers the bootstrap runs on
    every resample)."""
    totals = comp.sums.totals()
    return PointEstimates(totals, *point_values(comp.finishers(totals)))
