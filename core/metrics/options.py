"""How an evaluation is computed (:class:`EvaluationOptions`): one object that travels from the command line to the
metrics (:func:`core.metrics.pipeline.evaluate`), the bootstrap and Dask (:func:`core.distributed.evaluate.
evaluate_dask`), as RSMTool's configuration object and scikit-learn's estimator parameters do."""

from __future__ import annotations

from dataclasses import dataclass

from easl_toolkit.core.metrics.data import Scale, Weights


@dataclass(frozen=True)
class EvaluationOptions:
    """The options of an evaluation (their defaults are RSMTool's where it has them).

    Attributes
    ----------
    scale : Scale, optional
        The score scale; default: [min, max] of the human scores after the policy, with a note saying so.
    exclude_zeros : bool
        RSMTool's ``exclude_zero_scores`` (a first human 0 leaves the comparisons, other 0s: missing).
    rater_error_variance : float, optional
        ``V_e`` from another sample for the true-score metrics (default: from the data; Loukina et al. 2020).
    n_bootstrap, seed, confidence :
        Bootstrap resamples (0: none), their seed, and the level of every interval (Efron & Tibshirani 1993,
        percentile).
    population_size : float, optional
        ``N`` of the finite-population correction of the analytic se (Gwet 2014, 5.3; irrCAC's ``N``).
    base_group : str, optional
        RSMTool's reference level of the subgroups.
    weights : tuple of Weights
        More all-raters weightings (irrCAC's ``ordinal``, ``radical``, ``ratio``, ``circular``, ``bipolar``).
    """

    scale: Scale | None = None
    exclude_zeros: bool = False
    rater_error_variance: float | None = None
    n_bootstrap: int = 0
    seed: int = 0
    confidence: float = 0.95
    population_size: float | None = None
    base_group: str | None = None
    weights: tuple[Weights, ...] = ()
