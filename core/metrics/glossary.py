"""What each figure of ``easl evaluate`` is, in one sentence, and the groups the terminal tables and ``report.md``
show them in.

The groups follow RSMTool's documentation, "Evaluation metrics" (descriptives of the marginal distributions, then
accuracy, agreement and association of the observed scores, the true-score evaluations, fairness; ``docs/design.md``
4.2-4.6 gives every formula with its source). ``docs/guides/evaluation.md``, "Reading the figures", is the same
glossary for the documentation site (``tests/test_metrics_report.py`` checks that it names every figure here).

Standard library only: the command line imports it before numpy.
"""

from __future__ import annotations

from typing import NamedTuple


class Group(NamedTuple):
    """One group of figures: its ``title``, what it tells (``about``) and its figures' names (``keys``)."""

    title: str
    about: str
    keys: tuple[str, ...]


def _weighted(stem: str, identity: str | None = None) -> tuple[str, ...]:
    return (identity or stem, f"{stem}_linear", f"{stem}_quadratic")


#: The observed-score figures (system against the first human column, or human against human) by group.
OBSERVED_GROUPS: tuple[Group, ...] = (
    Group(
        "Descriptives",
        "the scores compared: how many, their mean and spread, and how far apart the two means are",
        ("N", "h_mean", "h_sd", "sys_mean", "sys_sd", "smd"),
    ),
    Group(
        "Accuracy",
        "how far the system's scores are from the human's (lower errors and higher R2 are better)",
        ("mse", "rmse", "r2"),
    ),
    Group(
        "Agreement",
        "how often the two give the same score, beyond what chance alone would give (1 perfect agreement, 0 what "
        "chance gives); qwk on the raw scores, the others on scores rounded to the scale's categories",
        (
            "exact_agr",
            "adj_agr",
            "qwk",
            *_weighted("conger_kappa"),
            "gwet_ac1",
            "gwet_ac2_linear",
            "gwet_ac2_quadratic",
            *_weighted("bp"),
            *_weighted("fleiss_kappa"),
            "krippendorff_alpha_nominal",
            "krippendorff_alpha_ordinal",
            "krippendorff_alpha_interval",
        ),
    ),
    Group(
        "Association",
        "whether the two order the responses alike (-1 to 1; 1 the same order)",
        ("corr", "spearman", "kendall_tau_b", "kendall_tau_c"),
    ),
)

#: The true-score figures (Loukina et al. 2020) of every system, and the disattenuated correlation.
TRUE_SCORE_GROUP = Group(
    "True score",
    "the system against the true score, the mean of infinitely many human ratings, estimated from the responses "
    "rated more than once (Loukina et al. 2020)",
    (
        "N",
        "N_single",
        "N_multiple",
        "rater_error_variance",
        "true_score_variance",
        "mse_true",
        "prmse",
        "disattenuated_corr",
    ),
)

#: RSMTool's fairness analyses (Loukina, Madnani & Zechner 2019).
FAIRNESS_GROUP = Group(
    "Fairness",
    "whether the system's errors differ between subgroups: adjusted R2 of a regression of the error on the "
    "group (0: the group explains nothing), its F-test p-value",
    ("osa", "osd", "csd"),
)

_WEIGHTS = " Linear and quadratic weights count a near miss as partial agreement."

#: One sentence per figure.
MEANING: dict[str, str] = {
    "N": "responses compared (a count: no interval)",
    "N_raters": "human columns",
    "N_pairable": "responses with two or more ratings",
    "N_single": "responses with one human rating",
    "N_multiple": "responses with two or more human ratings (those that estimate the rater error)",
    "h_mean": "mean of the human scores",
    "h_sd": "standard deviation of the human scores (ddof = 1)",
    "sys_mean": "mean of the system scores",
    "sys_sd": "standard deviation of the system scores (ddof = 1)",
    "smd": "standardized mean difference, (system mean - human mean) / human sd: 0 is no bias; RSMTool flags "
    "|SMD| > 0.15 (human-human: the difference of the two raters' means over their pooled sd)",
    "mse": "mean squared error, mean of (system - human)^2",
    "rmse": "root mean squared error, in score points",
    "r2": "1 - MSE / variance of the human scores: the share of the human scores' variance the system predicts "
    "(below 0: worse than always giving the human mean)",
    "corr": "Pearson's r: how close the pairs of scores lie to a straight line (-1 to 1)",
    "spearman": "Spearman's rho: Pearson's r of the ranks; 1 when the two order every response alike",
    "kendall_tau_b": "Kendall's tau-b: concordant minus discordant pairs of responses, corrected for ties",
    "kendall_tau_c": "Kendall's tau-c (Stuart): tau for scores with different numbers of distinct values",
    "exact_agr": "% of responses where the rounded system score equals the human score",
    "adj_agr": "% of responses where the rounded system score is within one point of the human score",
    "qwk": "quadratic weighted kappa on the raw scores (RSMTool's continuous wtkappa): agreement, penalising a "
    "difference by its square",
    "conger_kappa": "Cohen's kappa (Conger's with more raters): agreement beyond the chance agreement of each "
    "rater's own distribution of scores (RSMTool's kappa)." + _WEIGHTS,
    "gwet_ac1": "Gwet's AC1 (AC2 with weights): agreement beyond chance, with chance from how far the ratings are "
    "from uniform; stays stable when most responses get one score." + _WEIGHTS,
    "bp": "Brennan-Prediger: agreement beyond the chance of scores drawn uniformly over the scale's categories."
    + _WEIGHTS,
    "fleiss_kappa": "Fleiss' kappa (Scott's pi with two raters): agreement beyond the chance agreement of the "
    "pooled distribution of scores." + _WEIGHTS,
    "krippendorff_alpha_nominal": "Krippendorff's alpha, 1 - observed / expected disagreement, with the distance "
    "of the level named: nominal (equal or not), ordinal (ranks), interval (squared difference), ratio",
    "prmse": "proportional reduction in mean squared error, 1 - mse_true / true_score_variance: the share of the "
    "true scores' variance the system predicts (1 perfect; above 1 or below 0: too few double-scored responses)",
    "mse_true": "the system's mean squared error against the true score",
    "true_score_variance": "variance of the true scores",
    "rater_error_variance": "variance of one human rating about the true score (V_e)",
    "disattenuated_corr": "corr / sqrt(human-human corr): the correlation the system would have with a perfectly "
    "reliable human score (its interval is cut to [-1, 1], its value is not)",
    "dsm": "difference of standardized means in the group, z(system) - z(human) with the whole set's means and sds",
    "osa": "overall score accuracy: adjusted R2 of squared error ~ group; do some groups get less accurate scores?",
    "osd": "overall score difference: adjusted R2 of error ~ group; does the system score some groups higher?",
    "csd": "conditional score difference: the same, given the human score (adjusted R2 of error ~ group + human "
    "score, minus that of error ~ human score)",
}

#: Degradation, the figures that compare a system with the human-human agreement.
DEGRADATION = (
    "a system's figure minus the human-human figure (on the responses both humans scored): for an agreement or "
    "association figure, below 0 the system agrees less with the first human than the second human does (for mse, "
    "above 0)"
)


def meaning(key: str) -> str:
    """The sentence of figure ``key``; a weighted or other-level variant takes its family's (``bp_linear``: ``bp``).

    Examples
    --------
    >>> meaning("gwet_ac2_quadratic") == meaning("gwet_ac1")
    True
    >>> meaning("krippendorff_alpha_ratio").startswith("Krippendorff's alpha")
    True
    """
    if key in MEANING:
        return MEANING[key]
    if key.startswith("gwet_ac2"):
        return MEANING["gwet_ac1"]
    if key.startswith("krippendorff_alpha"):
        return MEANING["krippendorff_alpha_nominal"]
    for stem in ("conger_kappa", "fleiss_kappa", "bp"):
        if key.startswith(stem + "_"):
            return MEANING[stem]
    return ""


def group_of(key: str) -> str:
    """The title of the observed-score group of ``key`` ("" when it is in none).

    Examples
    --------
    >>> group_of("rmse"), group_of("gwet_ac2_ordinal")
    ('Accuracy', 'Agreement')
    """
    for group in OBSERVED_GROUPS:
        if key in group.keys:
            return group.title
    return "Agreement" if meaning(key) and key not in MEANING else ""


def p_text(p: float | None) -> str:
    """A p-value as printed: four decimals, ``< 0.0001`` below that, ``n/a`` when undefined.

    Examples
    --------
    >>> p_text(3e-9), p_text(0.04213), p_text(float("nan"))
    ('< 0.0001', '0.0421', 'n/a')
    """
    if p is None or p != p:
        return "n/a"
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"
