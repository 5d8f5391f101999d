"""Numbers published by the seed papers (and by the PRMSE authors' public notebooks), for side-by-side reports.

Sources:

- "paper": Loukina et al. (2020), "Using PRMSE to evaluate automated scoring systems in the presence of label
  noise", BEA workshop (Table 1, Table 2, Appendix Table 3 and Table 4, the numbers quoted in sections 4.1 and 5.2).
- "notebook": the outputs stored in the authors' public notebooks (github.com/EducationalTestingService/
  prmse-simulations, ``notebooks/*.ipynb``, MIT licence), which print the same quantities with 6 decimals.
- Yannakoudakis & Cummins (2015), section 4: qualitative findings (which coefficient is robust / sensitive).
- Sakaguchi & Van Durme (2018), section 5: qualitative findings and the chosen parameters.
"""

from __future__ import annotations

PAPER = "Loukina et al. 2020"
NOTEBOOK = "authors' notebook"

# Rater error sds chosen by the authors' search (rater_metadata.csv; docs/design.md, section 6.1, step 2).
ERROR_SDS = {"low": 0.85, "moderate": 0.60, "average": 0.46, "high": 0.24}

# Table 1: category -> (HH corr, mean, sd); paper to 2 decimals, notebook to 6.
TABLE1_PAPER = {
    "low": (0.40, 3.83, 1.14),
    "moderate": (0.55, 3.83, 0.99),
    "average": (0.65, 3.83, 0.91),
    "high": (0.80, 3.83, 0.83),
}
TABLE1_NOTEBOOK = {
    "low": (0.401045, 3.826802, 1.136638),
    "moderate": (0.551284, 3.832834, 0.988477),
    "average": (0.648225, 3.833874, 0.914957),
    "high": (0.801706, 3.833890, 0.828453),
}

# Table 2: system category -> (R2 with true score, r with true score, r with 'average' raters).
TABLE2_PAPER = {
    "poor": (0.01, 0.71, 0.57),
    "low": (0.40, 0.79, 0.64),
    "medium": (0.65, 0.86, 0.69),
    "high": (0.80, 0.91, 0.74),
    "perfect": (0.99, 1.00, 0.80),
}
TABLE2_NOTEBOOK = {
    "poor": (0.006296, 0.709008, 0.570367),
    "low": (0.403778, 0.792025, 0.637270),
    "medium": (0.652204, 0.861673, 0.693415),
    "high": (0.801259, 0.913514, 0.735222),
    "perfect": (0.990063, 0.995071, 0.801093),
}

# Section 4.1 / Figure 1: mean metric per (metric, reference) and rater category (notebook, metric_stability).
FIG1_NOTEBOOK = {
    ("QWK", "h1"): (0.547853, 0.666112, 0.730357, 0.813188),
    ("QWK", "h1-h2 mean"): (0.682284, 0.767889, 0.809369, 0.856459),
    ("R2", "h1"): (0.315704, 0.439609, 0.516935, 0.632639),
    ("R2", "h1-h2 mean"): (0.449658, 0.565152, 0.626349, 0.702588),
    ("degradation", "h1"): (-0.177214, -0.126635, -0.086549, -0.011377),
    ("degradation", "h1-h2 mean"): (-0.289228, -0.217583, -0.160722, -0.055033),
    ("r", "h1"): (0.578681, 0.678744, 0.735397, 0.813347),
    ("r", "h1-h2 mean"): (0.690695, 0.769692, 0.809570, 0.857004),
}
# Section 4.1 text: mean r against the pair mean from 0.69 (low) to 0.86 (high); degradation from -0.05 to -0.30.
FIG1_PAPER_TEXT = {"r_mean_low": 0.69, "r_mean_high": 0.86, "degradation_max": -0.05, "degradation_min": -0.30}

# Section 5.2 / Figure 4 text: R2 (pair mean) 0.43-0.71, PRMSE 0.76-0.82; notebook min/max over the 200 pairs.
FIG4_PAPER = {"R2_min": 0.43, "R2_max": 0.71, "PRMSE_min": 0.76, "PRMSE_max": 0.82, "R2_true": 0.80}
FIG4_NOTEBOOK = {
    "R2_min": 0.434688,
    "R2_max": 0.712106,
    "PRMSE_min": 0.762230,
    "PRMSE_max": 0.822187,
    "PRMSE_mean": 0.791218,
}

# Section 4.2: the fixed 'average' pair of the notebook and Appendix Table 3 (system x rater category counts).
SAME_PAIR_NOTEBOOK = ("h_107", "h_101")
TABLE3_PAPER = {
    "poor": (1, 3, 0, 1),
    "low": (0, 0, 2, 3),
    "medium": (3, 0, 1, 1),
    "high": (2, 1, 1, 1),
    "perfect": (2, 0, 2, 1),
}

# Appendix Table 4: range (max - min) of PRMSE over the 50 pairs of each category, by % double-scored.
TABLE4_PERCENTAGES = (1, 2.5, 5, 10, 25, 50, 100)
TABLE4_PAPER = {
    1: (1.01, 0.41, 0.26, 0.12),
    2.5: (0.46, 0.30, 0.15, 0.09),
    5: (0.33, 0.17, 0.12, 0.07),
    10: (0.24, 0.13, 0.08, 0.06),
    25: (0.18, 0.09, 0.07, 0.03),
    50: (0.08, 0.07, 0.04, 0.02),
    100: (0.06, 0.03, 0.02, 0.02),
}
TABLE4_NOTEBOOK = {
    1: (1.010176, 0.405627, 0.260800, 0.122973),
    2.5: (0.455254, 0.302736, 0.150803, 0.088995),
    5: (0.326148, 0.170422, 0.122148, 0.069175),
    10: (0.240592, 0.127596, 0.084640, 0.055022),
    25: (0.180157, 0.092271, 0.067730, 0.030554),
    50: (0.083217, 0.066545, 0.037641, 0.024934),
    100: (0.059957, 0.034016, 0.022005, 0.020628),
}

# Yannakoudakis & Cummins (2015), section 4: the paper's verdicts for the synthetic experiments.
YC_VERDICTS = {
    "trait prevalence": "nearly all coefficients vary with the gold distribution; AC less than Cohen's kappa; "
    "only BP is invariant (it tracks percent agreement)",
    "marginal homogeneity": "Cohen's kappa (linear, quadratic) penalises systems whose marginals match the gold; "
    "AC (linear, quadratic) and quadratic BP promote them; linear BP is unchanged",
    "magnitude of misclassification": "quadratic-weighted coefficients decrease as each error grows (constant "
    "MAE); linear-weighted ones increase slightly",
    "score range": "all coefficients change with the scale; quadratic weights more than linear; quadratic Cohen "
    "most sensitive; AC quadratic more stable than BP quadratic (FCE data, not simulated)",
}

# Sakaguchi & Van Durme (2018), section 5.
EASL_CLAIMS = {
    "efficiency": "EASL reaches DA's correlation with about half the annotations (lexical frequency: 2 EASL "
    "iterations ~ 3 DA annotators; political spectrum: 4-way EASL ~ 6-way DA)",
    "compression": "RA converges to a narrow range of scalar values (no distance from the bounds), while DA and "
    "EASL match the oracle's distribution",
    "political_final": "all three methods reach Spearman above 0.9 on the political spectrum data",
}
