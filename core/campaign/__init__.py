"""Evaluation campaigns: which responses get a human score, and estimates of a scoring system's metrics from them.

A campaign has N responses, each with the scores of K scoring systems (known for every response), and buys human
scores for some of them: a first score (for the mean human score, r, QWK, RMSE, SMD against each system) and, for
some, a second score (for the rater error variance that PRMSE needs and for human-human agreement).

- :mod:`core.campaign.moments`: every metric as a smooth function of a vector of population means (moments).
- :mod:`core.campaign.model`: the human-score model fitted on earlier iterations (conditional mean and spread).
- :mod:`core.campaign.design`: inclusion probabilities (Neyman allocation with a uniform floor and a rule that
  keeps the design no worse than uniform) and Poisson sampling.
- :mod:`core.campaign.estimators`: design-weighted, prediction-powered (AIPW) estimates with PPI++ power tuning,
  delta-method intervals and a weighted bootstrap; the classical (labelled-subset) baseline.
- :mod:`core.campaign.ppi`: the mean and OLS estimators of prediction-powered inference in the labelled /
  unlabelled form of Angelopoulos et al. (2023), for comparison with the published package.

Sources: Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference", Science 382;
Angelopoulos, Duchi & Zrnic (2023), "PPI++: Efficient prediction-powered inference", arXiv:2311.01453;
Zrnic & Candès (2024), "Active statistical inference", ICML; Loukina et al. (2020), "Using PRMSE to evaluate
automated scoring systems in the presence of label noise", BEA workshop.
"""
