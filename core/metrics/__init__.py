"""Evaluation library: agreement, association, accuracy, true-score (PRMSE) and fairness metrics with uncertainty.

scikit-learn style: arrays in, numbers out, explicit parameters, validated input. Undefined values are NaN with an
:class:`UndefinedMetricWarning` naming the reason (never an exception for degenerate data). Definitions and
conventions: ``docs/guides/evaluation.md`` and the docstrings (formula and source on every
function).

Stable public API (used by ``easl evaluate`` and ``core.simulate``):

Observed scores (``y_true`` human, ``y_pred`` system)
    pearson_r, spearman_rho, kendall_tau_b, kendall_tau_c, quadratic_weighted_kappa, cohen_kappa (SKLL; scikit-
    learn's labels and sample_weight), cohen_kappa_test / kappa_test_from_table (statsmodels), exact_agreement,
    adjacent_agreement, agreement, standardized_mean_difference, mean_squared_error, root_mean_squared_error,
    r2_score, difference_of_standardized_means, disattenuated_correlation, degradation
Chance-corrected agreement (``ratings`` responses x raters, NaN = missing; explicit ``categories``)
    gwet_ac, brennan_prediger, fleiss_kappa (= scott_pi), conger_kappa, chance_corrected_agreement,
    gwet_standard_errors, agreement_inference (se, t-interval, p-value, finite-population correction; irrCAC),
    benchmark (Landis-Koch, Fleiss, Altman, ...; Gwet's probabilistic rule), ratings_from_distribution,
    agreement_weights (irrCAC's eight weightings), krippendorff_alpha (levels; one entry point)
Score post-processing (RSMTool)
    trim_scores, scale_scores
True score
    variance_of_errors, true_score_variance, mse_true, prmse, true_score_evaluation, rating_counts
Fairness
    fairness_analysis, fairness_resampled (vectorised over bootstrap resamples)
Uncertainty
    bootstrap_prmse, bootstrap_fairness, resample_chunks, percentile_interval, bootstrap_ci;
    fisher_z_ci, normal_ci, student_t_ci (analytic intervals)
Data model and the whole pipeline
    Scale, apply_score_policy, observed_metrics (every observed key for one pair, one pass),
    evaluate (returns a typed Evaluation: Figure, Block, SystemEvaluation; ``to_json()`` for the JSON object)
"""

from easl_toolkit.core.metrics.bootstrap import (
    bootstrap_ci,
    bootstrap_fairness,
    bootstrap_prmse,
    percentile_interval,
    resample_chunks,
)
from easl_toolkit.core.metrics.data import Scale, agreement_weights, rating_counts, ratings_from_distribution
from easl_toolkit.core.metrics.estimates.agreement import (
    brennan_prediger,
    chance_corrected_agreement,
    conger_kappa,
    fleiss_kappa,
    gwet_ac,
    scott_pi,
)
from easl_toolkit.core.metrics.estimates.association import kendall_tau_b, kendall_tau_c, spearman_rho
from easl_toolkit.core.metrics.estimates.fairness import fairness_analysis
from easl_toolkit.core.metrics.estimates.fairness_resampled import fairness_resampled
from easl_toolkit.core.metrics.estimates.krippendorff import krippendorff_alpha
from easl_toolkit.core.metrics.estimates.observed import (
    adjacent_agreement,
    agreement,
    cohen_kappa,
    degradation,
    difference_of_standardized_means,
    disattenuated_correlation,
    exact_agreement,
    mean_squared_error,
    pearson_r,
    quadratic_weighted_kappa,
    r2_score,
    root_mean_squared_error,
    standardized_mean_difference,
)
from easl_toolkit.core.metrics.estimates.pair import observed_metrics
from easl_toolkit.core.metrics.estimates.true_score import (
    mse_true,
    prmse,
    true_score_evaluation,
    true_score_variance,
    variance_of_errors,
)
from easl_toolkit.core.metrics.intervals.agreement_variance import (
    Inference,
    agreement_inference,
    gwet_standard_errors,
    table_inference,
)
from easl_toolkit.core.metrics.intervals.analytic import (
    Benchmark,
    Interval,
    benchmark,
    fisher_z_ci,
    normal_ci,
    student_t_ci,
)
from easl_toolkit.core.metrics.intervals.kappa_test import KappaTest, cohen_kappa_test, kappa_test_from_table
from easl_toolkit.core.metrics.notes import SampleSizeWarning, UndefinedMetricWarning
from easl_toolkit.core.metrics.pipeline import evaluate
from easl_toolkit.core.metrics.prepare import apply_score_policy, scale_scores, trim_scores
from easl_toolkit.core.metrics.results import Block, Evaluation, Figure, SystemEvaluation

__all__ = [
    "Scale",
    "apply_score_policy",
    "rating_counts",
    "UndefinedMetricWarning",
    "SampleSizeWarning",
    "pearson_r",
    "spearman_rho",
    "kendall_tau_b",
    "kendall_tau_c",
    "quadratic_weighted_kappa",
    "cohen_kappa",
    "cohen_kappa_test",
    "kappa_test_from_table",
    "KappaTest",
    "exact_agreement",
    "adjacent_agreement",
    "agreement",
    "standardized_mean_difference",
    "mean_squared_error",
    "root_mean_squared_error",
    "r2_score",
    "difference_of_standardized_means",
    "disattenuated_correlation",
    "degradation",
    "gwet_ac",
    "brennan_prediger",
    "fleiss_kappa",
    "scott_pi",
    "conger_kappa",
    "chance_corrected_agreement",
    "gwet_standard_errors",
    "agreement_inference",
    "table_inference",
    "Inference",
    "benchmark",
    "Benchmark",
    "ratings_from_distribution",
    "agreement_weights",
    "krippendorff_alpha",
    "trim_scores",
    "scale_scores",
    "variance_of_errors",
    "true_score_variance",
    "mse_true",
    "prmse",
    "true_score_evaluation",
    "fairness_analysis",
    "fairness_resampled",
    "bootstrap_fairness",
    "bootstrap_prmse",
    "bootstrap_ci",
    "percentile_interval",
    "resample_chunks",
    "fisher_z_ci",
    "normal_ci",
    "student_t_ci",
    "Interval",
    "evaluate",
    "Evaluation",
    "Figure",
    "Block",
    "SystemEvaluation",
    "observed_metrics",
]
