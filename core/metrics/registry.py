"""The metric registry: every figure of ``easl evaluate`` with its name, source, function, and the data it uses.

One :class:`Metric` per reported figure. ``responses`` and ``raters`` say which rows and which rating columns a
metric is computed on, and the pipeline (:mod:`core.metrics.pipeline`) selects the data from these declarations
instead of from one global drop rule. ``responses``: ``"reference"`` (responses with a reference, first human,
score and every system score; RSMTool), ``"double_scored"`` (both of the first two human scores), ``"rated"`` (at
least one human rating; with a system, also every system score: true scores), ``"group"`` (the reference responses
of one subgroup). ``raters``: ``"reference_system"`` (the first human column against a system), ``"first_two"``
(the first two human columns), ``"all"`` (every human column; with a system, the system score too for the
true-score metrics).

Which scores the categorical metrics compare: the system score rounded half-to-even and clipped to the scale
(``categorical=True``); moment and rank metrics use the raw scores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple

from numpy.typing import NDArray

from easl_toolkit.core.metrics.data import WEIGHTS, Weights, check_option
from easl_toolkit.core.metrics.estimates.agreement import brennan_prediger, conger_kappa, fleiss_kappa, gwet_ac
from easl_toolkit.core.metrics.estimates.association import kendall_tau_b, kendall_tau_c, spearman_rho
from easl_toolkit.core.metrics.estimates.krippendorff import krippendorff_alpha
from easl_toolkit.core.metrics.estimates.observed import (
    adjacent_agreement,
    cohen_kappa,
    exact_agreement,
    mean_squared_error,
    pearson_r,
    quadratic_weighted_kappa,
    r2_score,
    root_mean_squared_error,
    standardized_mean_difference,
)
from easl_toolkit.core.metrics.estimates.true_score import mse_true, prmse, true_score_variance, variance_of_errors

Responses = Literal["reference", "double_scored", "rated", "group"]
Raters = Literal["reference_system", "first_two", "all"]
Family = Literal["moment", "rank", "categorical", "true_score", "fairness"]


class Metric(NamedTuple):
    """One reported figure: ``name``, its key in the JSON object and the tables (one name per coefficient
    everywhere); ``label``, a short human-readable label; ``source``, the paper and equation (or the peer whose
    definition is followed); ``family``, ``"moment"``, ``"rank"``, ``"categorical"`` (on scores rounded to the scale),
    ``"true_score"`` or ``"fairness"``; ``responses`` and ``raters``, the responses and rating columns it uses (see the
    module docstring); ``function``, the public library function that computes it on its own (or None)."""

    name: str
    label: str
    source: str
    family: Family
    responses: Responses = "reference"
    raters: Raters = "reference_system"
    function: Callable[..., Any] | None = None


_G14 = "Gwet (2014), Handbook of Inter-Rater Reliability, ch. 2-5"
_RSM = 'RSMTool documentation, "Evaluation metrics" (docs/design.md 4.2)'


#: The weightings every report shows; more can be asked for (``evaluate(weights=...)``).
REPORT_WEIGHTS: tuple[Weights, ...] = ("identity", "linear", "quadratic")


def report_name(coefficient: str, weights: str) -> str | None:
    """The one report name of a coefficient under a weighting: ``gwet_ac1``, ``gwet_ac2_<weights>``, ``bp[_w]``,
    ``fleiss_kappa[_w]``, ``conger_kappa[_w]``; Krippendorff's alpha only as its nominal (identity) and interval
    (quadratic) levels (None otherwise).

    Examples
    --------
    >>> report_name("gwet", "identity"), report_name("fleiss", "ordinal"), report_name("krippendorff", "quadratic")
    ('gwet_ac1', 'fleiss_kappa_ordinal', 'krippendorff_alpha_interval')
    """
    if coefficient == "krippendorff":
        return {"identity": "krippendorff_alpha_nominal", "quadratic": "krippendorff_alpha_interval"}.get(weights)
    if coefficient == "gwet":
        return "gwet_ac1" if weights == "identity" else f"gwet_ac2_{weights}"
    stem = {"bp": "bp", "fleiss": "fleiss_kappa", "conger": "conger_kappa"}[coefficient]
    return stem if weights == "identity" else f"{stem}_{weights}"


def _weighted(
    coefficient: str,
    label: str,
    source: str,
    function: Callable[..., Any],
    *,
    responses: Responses = "reference",
    raters: Raters = "reference_system",
) -> tuple[Metric, ...]:
    """The versions of one coefficient under :data:`REPORT_WEIGHTS`, named by :func:`report_name`."""
    return tuple(
        Metric(
            str(report_name(coefficient, w)),
            label if w == "identity" else f"{label} ({w} weights)",
            source,
            "categorical",
            responses,
            raters,
            function,
        )
        for w in REPORT_WEIGHTS
    )


def _alphas(
    responses: Responses, raters: Raters, levels: tuple[str, ...] = ("nominal", "ordinal", "interval")
) -> tuple[Metric, ...]:
    return tuple(
        Metric(
            "krippendorff_alpha_" + level,
            f"Krippendorff's alpha ({level})",
            "Krippendorff (2011), Computing Krippendorff's Alpha-Reliability",
            "categorical",
            responses,
            raters,
            krippendorff_alpha,
        )
        for level in levels
    )


#: Observed-score metrics of one comparison (system vs reference human, or human vs human), in report order.
OBSERVED: tuple[Metric, ...] = (
    Metric("N", "responses compared", _RSM, "moment"),
    Metric("h_mean", "human mean", _RSM, "moment"),
    Metric("h_sd", "human sd (ddof=1)", _RSM, "moment"),
    Metric("sys_mean", "system mean", _RSM, "moment"),
    Metric("sys_sd", "system sd (ddof=1)", _RSM, "moment"),
    Metric("corr", "Pearson's r", _RSM, "moment", function=pearson_r),
    Metric("spearman", "Spearman's rho", "Spearman (1904); scipy.stats.spearmanr", "rank", function=spearman_rho),
    Metric(
        "kendall_tau_b", "Kendall's tau-b", "Kendall (1945); scipy.stats.kendalltau", "rank", function=kendall_tau_b
    ),
    Metric(
        "kendall_tau_c",
        "Kendall's tau-c",
        "Stuart (1953); scipy.stats.kendalltau(variant='c')",
        "rank",
        function=kendall_tau_c,
    ),
    Metric(
        "qwk", "quadratic weighted kappa (continuous)", _RSM + ", wtkappa", "moment", function=quadratic_weighted_kappa
    ),
    *_weighted("conger", "Cohen's (Conger's) kappa", "Cohen (1960, 1968); Conger (1980); SKLL kappa", cohen_kappa),
    Metric("exact_agr", "exact agreement (%)", _RSM, "categorical", function=exact_agreement),
    Metric("adj_agr", "adjacent agreement (%)", _RSM, "categorical", function=adjacent_agreement),
    Metric("smd", "standardized mean difference", _RSM, "moment", function=standardized_mean_difference),
    Metric("mse", "mean squared error", _RSM, "moment", function=mean_squared_error),
    Metric("rmse", "root mean squared error", _RSM, "moment", function=root_mean_squared_error),
    Metric("r2", "R2", _RSM, "moment", function=r2_score),
    *_weighted("gwet", "Gwet's AC1", _G14 + ", eq. 4.1, 5.1", gwet_ac),
    *_weighted("bp", "Brennan-Prediger", "Brennan & Prediger (1981); " + _G14, brennan_prediger),
    *_weighted("fleiss", "Scott's pi (Fleiss' kappa)", "Scott (1955); Fleiss (1971); " + _G14, fleiss_kappa),
    *_alphas("reference", "reference_system"),
)

#: The short table (RSMTool's ``eval_short``).
SHORT: tuple[str, ...] = (
    "N",
    "h_mean",
    "h_sd",
    "sys_mean",
    "sys_sd",
    "corr",
    "qwk",
    "conger_kappa",
    "exact_agr",
    "adj_agr",
    "smd",
    "mse",
    "r2",
    "gwet_ac1",
    "krippendorff_alpha_interval",
)

#: True-score metrics of one system against every human rating (Loukina et al. 2020, Appendix B).
TRUE_SCORE: tuple[Metric, ...] = tuple(
    Metric(name, label, "Loukina et al. (2020)" + source, "true_score", "rated", "all", function)
    for name, label, source, function in (
        ("N", "responses", "", None),
        ("N_raters", "human columns", "", None),
        ("N_single", "single-scored responses", "", None),
        ("N_multiple", "responses with 2+ ratings", "", None),
        ("rater_error_variance", "rater error variance V_e", ", App. B", variance_of_errors),
        ("true_score_variance", "true score variance", ", App. B", true_score_variance),
        ("mse_true", "MSE against the true score", ", App. B", mse_true),
        ("prmse", "PRMSE", ", App. B eq. 8", prmse),
    )
)

#: Chance-corrected agreement among all human columns, on every rated response (identity, linear and quadratic
#: weights; ``evaluate(weights=...)`` adds irrCAC's other weightings under the same naming rule,
#: :func:`core.metrics.intervals.agreement_variance.report_name`).
MULTI_RATER: tuple[Metric, ...] = (
    *_weighted("gwet", "Gwet's AC1", _G14, gwet_ac, responses="rated", raters="all"),
    *_weighted("bp", "Brennan-Prediger", _G14, brennan_prediger, responses="rated", raters="all"),
    *_weighted("fleiss", "Fleiss' kappa", "Fleiss (1971); " + _G14, fleiss_kappa, responses="rated", raters="all"),
    *_weighted("conger", "Conger's kappa", "Conger (1980); " + _G14, conger_kappa, responses="rated", raters="all"),
    *_alphas("rated", "all", ("nominal", "ordinal", "interval", "ratio")),
)

#: The counts beside the all-raters block.
ALL_RATERS_COUNTS: tuple[str, ...] = ("N", "N_pairable", "N_raters")

#: Names, in report order.
OBSERVED_KEYS: tuple[str, ...] = tuple(m.name for m in OBSERVED)
TRUE_SCORE_KEYS: tuple[str, ...] = tuple(m.name for m in TRUE_SCORE)
RANK_KEYS: tuple[str, ...] = tuple(m.name for m in OBSERVED if m.family == "rank")
#: Figures that are counts (written as JSON integers).
COUNT_KEYS: frozenset[str] = frozenset({"N", "N_raters", "N_single", "N_multiple", "N_pairable", "N_human_human"})


def report_weightings(extra: Iterable[Weights], cats: NDArray[Any] | None = None) -> tuple[Weights, ...]:
    """:data:`REPORT_WEIGHTS` then the other weightings asked for (``evaluate(weights=...)``), each checked
    (:func:`core.metrics.data.check_option`); ``ratio`` needs categories other than 0 (``cats``, when known).

    Examples
    --------
    >>> report_weightings(["ordinal", "linear", "ordinal"])
    ('identity', 'linear', 'quadratic', 'ordinal')
    """
    extra = tuple(extra)
    for w in extra:
        check_option("weights", w, WEIGHTS)
    if "ratio" in extra and cats is not None and (cats == 0).any():
        raise ValueError("ratio weights need categories other than 0")
    return REPORT_WEIGHTS + tuple(w for w in dict.fromkeys(extra) if w not in REPORT_WEIGHTS)
