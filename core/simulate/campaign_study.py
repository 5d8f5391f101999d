"""Evaluation-campaign study: coverage and interval width against budget for active, uniform+PPI and classical
designs, on the simulated raters and systems of the PRMSE paper.

World (Loukina et al. 2020, section 3; protocol in the project's simulation reference): true scores
T ~ N(3.844, 0.74) clipped to [1, 6]; a human score is clip(round(T + e), 1, 6) with e ~ N(0, sd) and sd the error
sd the authors' search found for each rater category (low 0.85, moderate 0.60, average 0.46, high 0.24; inter-rater
r 0.40, 0.55, 0.65, 0.80); every response has two independent human scores (first and second rater) that a campaign
may buy. A system scores T + N(0, sd_s) with sd_s = 0.74 sqrt(1 / r^2 - 1), so that its correlation with the
true score is r (the quality). The true value of a metric is its value on :attr:`CampaignStudySettings.
truth_responses` responses, every one double-scored.

Designs, each at a budget b (expected human scores as a share of the N responses):

- observed metrics (mean human score, r, QWK, RMSE, SMD; targets of the design: mean, r, QWK, RMSE; SMD guarded):
  ``classical`` scores a uniform Poisson sample of b N responses and computes the metrics on it (no control
  variate); the other designs first score a uniform pilot of ``pilot_share`` b N responses, fit the human-score
  model on it, then spend the rest in one iteration: ``uniform`` (tau = 1, prediction-powered), ``active`` (Neyman
  with the robust uniform share), ``wrong`` (active with the spreads inverted, s -> 1 / s: deliberately wrong
  uncertainty estimates), ``oracle`` (Neyman, tau = 0, with the model and spreads fitted on
  ``oracle_responses`` fully scored responses: perfectly known uncertainties, the bound of the allocation);
- PRMSE and human-human agreement (targets of the design: both PRMSE forms; human-human r and QWK guarded):
  ``classical`` double-scores a uniform sample of b N / 2 responses (b N scores) and computes PRMSE with Loukina et
  al.'s formula on the mean of the two scores (the paper's section 5.3); the pilot double-scores ``pilot_share`` b N
  / 2 responses; ``uniform``, ``active`` and ``oracle`` then buy first and second scores (the Neyman split between
  them, uniform within each for ``uniform``), and report the combined PRMSE as "prmse" (the first-score form as
  "prmse_first").

All designs of a campaign share its simulated responses and the uniforms of their Poisson draws (common random
numbers), so differences between designs are paired over seeds. Every array op is over a chunk of campaigns at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from easl_toolkit.core.campaign.design import (
    DEPART_Z,
    apply_iteration,
    choose_iteration,
    spread_tables,
    target_residuals,
)
from easl_toolkit.core.campaign.estimators import CampaignEstimates, estimate
from easl_toolkit.core.campaign.model import HumanScoreModel, fit_model, predict
from easl_toolkit.core.campaign.moments import moment_predictions

#: Rater error sd per category (the authors' sd search; inter-rater r 0.40, 0.55, 0.65, 0.80).
RATER_ERROR_SD = {"low": 0.85, "moderate": 0.60, "average": 0.46, "high": 0.24}
OBSERVED_METRICS = ("mean", "r", "qwk", "rmse", "smd")
OBSERVED_TARGETS = ("mean", "r", "qwk", "rmse")
DOUBLE_TARGETS = ("prmse", "prmse_double")
#: Metrics each family reports besides its targets: the robust rule also guards them, so that it leaves the uniform
#: design only where no reported metric is estimated to lose (:func:`core.campaign.design.robust_tau`).
GUARDS = {"observed": ("smd",), "double": ("hh_r", "hh_qwk")}
DOUBLE_METRICS = ("prmse_combined", "prmse", "hh_r", "hh_qwk")
#: Names in the results: the classical double-scored PRMSE and the campaign's combined PRMSE are both "prmse";
#: the campaign's first-score PRMSE is "prmse_first".
RESULT_NAMES = {"prmse_double": "prmse", "prmse_combined": "prmse", "prmse": "prmse_first"}
OBSERVED_DESIGNS = ("classical", "uniform", "active", "wrong", "oracle")
DOUBLE_DESIGNS = ("classical", "uniform", "active", "oracle")


@dataclass(frozen=True)
class CampaignStudySettings:
    """Every parameter of the study; the defaults are the documented run."""

    n_responses: int = 10_000
    n_campaigns: int = 1000
    chunk: int = 50
    budgets: tuple[float, ...] = (0.025, 0.05, 0.1, 0.2, 0.3)
    rater_categories: tuple[str, ...] = ("low", "moderate", "average", "high")
    system_r: tuple[float, ...] = (0.3, 0.8, 0.9, 0.97)
    pilot_share: float = 0.25
    margin: float = DEPART_Z
    truth_responses: int = 1_000_000
    oracle_responses: int = 200_000
    true_mean: float = 3.844
    true_sd: float = 0.74
    score_min: float = 1.0
    score_max: float = 6.0
    seed: int = 2020


@dataclass(frozen=True)
class World:
    """C simulated campaigns: human scores (first, second) (C, N) and system scores (C, N, 1)."""

    first: NDArray[Any]
    second: NDArray[Any]
    systems: NDArray[Any]


def draw_world(s: CampaignStudySettings, error_sd: float, system_r: float, shape: tuple[int, int], rng: Any) -> World:
    """Simulate responses: true scores, two human scores and one system score each (module docstring)."""
    t = np.clip(rng.normal(s.true_mean, s.true_sd, shape), s.score_min, s.score_max)

    def human() -> NDArray[Any]:
        return np.asarray(
            np.clip(np.round(t + rng.normal(0.0, error_sd, shape)), s.score_min, s.score_max), dtype=np.float64
        )

    first, second = human(), human()
    sd_s = s.true_sd * np.sqrt(1.0 / system_r**2 - 1.0)
    return World(first=first, second=second, systems=(t + rng.normal(0.0, sd_s, shape))[..., None])


def truth(world: World) -> dict[str, float]:
    """Every metric on a fully double-scored world of one campaign (the true values)."""
    one = np.ones_like(world.first)
    metrics = OBSERVED_METRICS + ("prmse", "hh_r", "hh_qwk")
    est = estimate(world.systems, world.first, world.second, one, one, metrics=metrics)
    out = {name: float(est.value[0, t]) for t, (name, _) in enumerate(est.labels)}
    out["prmse_double"] = out["prmse_combined"] = out["prmse"]
    return out


@dataclass(frozen=True)
class Oracle:
    """The model and per-bin spreads fitted on a large fully scored world (perfectly known uncertainties)."""

    model: HumanScoreModel
    tables: dict[str, tuple[NDArray[Any], NDArray[Any]]]

    def tiled(self, c: int) -> HumanScoreModel:
        """The model repeated for a batch of c campaigns."""
        m = self.model
        return HumanScoreModel(
            coef=np.repeat(m.coef, c, axis=0),
            edges=np.repeat(m.edges, c, axis=0),
            bin_var=np.repeat(m.bin_var, c, axis=0),
            error_var=np.repeat(m.error_var, c, axis=0),
        )


def fit_oracle(world: World) -> Oracle:
    """Fit the oracle on a one-campaign fully scored world, for the observed and the PRMSE targets."""
    one = np.ones_like(world.first)
    model = fit_model(world.systems, world.first, world.second)
    tables = {}
    for key, targets in (("observed", OBSERVED_TARGETS), ("double", DOUBLE_TARGETS)):
        res = target_residuals(world.systems, world.first, world.second, one, one, model, targets)
        tables[key] = spread_tables(res)
    return Oracle(model=model, tables=tables)


def _predictions(model: HumanScoreModel, systems: NDArray[Any]) -> NDArray[Any]:
    m, v, _ = predict(model, systems)
    return moment_predictions(systems, m, v, model.error_var)


def _nan(shape: tuple[int, ...]) -> NDArray[Any]:
    return np.full(shape, np.nan)


@dataclass(frozen=True)
class Draws:
    """Uniforms of one chunk: the pilot / classical draw, and the final iteration's first and second draws."""

    pilot: NDArray[Any]
    first: NDArray[Any]
    second: NDArray[Any]


def _classical(world: World, share: float, double: bool, draws: Draws) -> tuple[CampaignEstimates, NDArray[Any]]:
    """Uniform Poisson sample with inclusion probability ``share`` (double-scored if ``double``); no control."""
    take = draws.pilot < share
    first = np.where(take, world.first, np.nan)
    second = np.where(take, world.second, np.nan) if double else _nan(first.shape)
    p = np.full(first.shape, share)
    metrics = ("prmse_double", "hh_r", "hh_qwk") if double else OBSERVED_METRICS
    est = estimate(world.systems, first, second, p, p, metrics=metrics)
    cost = take.sum(axis=1) * (2 if double else 1)
    return est, cost


def _two_iterations(
    s: CampaignStudySettings,
    world: World,
    budget: float,
    double: bool,
    design: str,
    draws: Draws,
    oracle: Oracle,
    rng: Any,
) -> tuple[CampaignEstimates, NDArray[Any]]:
    """Pilot (uniform, earlier iteration) then one designed iteration; estimates with the design's model."""
    c, n = world.first.shape
    pilot_share = budget * (0.5 if double else 1.0) * s.pilot_share
    take = draws.pilot < pilot_share
    first = np.where(take, world.first, np.nan)
    second = np.where(take, world.second, np.nan) if double else _nan((c, n))
    one = np.ones((c, n))
    spent = take.sum(axis=1) * (2 if double else 1)
    rest = np.maximum(budget * n - spent, 1.0)
    key = "double" if double else "observed"
    targets = DOUBLE_TARGETS if double else OBSERVED_TARGETS
    kwargs: dict[str, Any] = {"tau": None, "margin": s.margin, "guard": GUARDS[key]}
    if design == "uniform":
        kwargs = {"tau": 1.0}
    elif design == "wrong":
        kwargs = {"tau": None, "invert": True, "margin": s.margin, "guard": GUARDS[key]}
    elif design == "oracle":
        kwargs = {"tau": 0.0, "model": oracle.tiled(c), "tables": oracle.tables[key]}
    plan = choose_iteration(world.systems, first, second, one, one, budget=rest, targets=targets, rng=rng, **kwargs)
    previous = (np.full((c, n), pilot_share), np.full((c, n), pilot_share if double else 0.0))
    (first, second), (p1, p2) = apply_iteration(
        plan, (world.first, world.second), (first, second), (draws.first, draws.second), previous
    )
    metrics = DOUBLE_METRICS if double else OBSERVED_METRICS
    f = _predictions(plan.model, world.systems)
    est = estimate(world.systems, first, second, p1, p2, predictions=f, metrics=metrics)
    cost = (~np.isnan(first)).sum(axis=1) + (~np.isnan(second)).sum(axis=1)
    return est, cost


def _rows(
    est: CampaignEstimates, cost: NDArray[Any], truth_values: dict[str, float], tags: dict[str, Any]
) -> pd.DataFrame:
    """One row per (campaign, metric) of a design's estimates."""
    frames = []
    c = est.value.shape[0]
    for t, (name, _) in enumerate(est.labels):
        true = truth_values[name]
        frame = pd.DataFrame(
            {
                "campaign": tags["campaign0"] + np.arange(c),
                "value": est.value[:, t],
                "width": est.width[:, t],
                "covered": (est.low[:, t] <= true) & (true <= est.high[:, t]),
                "cost": cost.astype(np.float64),
                "n": np.nan if est.n is None else est.n[:, t],
            }
        )
        frame["metric"] = RESULT_NAMES.get(name, name)
        frame["truth"] = true
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    for key, value in tags.items():
        if key != "campaign0":
            out[key] = value
    return out


#: Draws C campaigns of N responses: ``draw((C, N), rng) -> World``.
WorldDraw = Callable[[tuple[int, int], Any], World]


def run_draws(
    s: CampaignStudySettings,
    draw: WorldDraw,
    tags: dict[str, Any],
    seed: Any,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Every design at every budget for ``n_campaigns`` campaigns drawn by ``draw``; ``tags`` (rater, system_r)
    label the rows, and a ``system_r`` of None is replaced by the true human-system r of the world."""
    rng = np.random.default_rng(seed)
    truth_values = truth(draw((1, s.truth_responses), rng))
    oracle = fit_oracle(draw((1, s.oracle_responses), rng))
    if tags.get("system_r") is None:
        tags = {**tags, "system_r": round(truth_values["r"], 3)}
    label = f"{tags['rater']} r={tags['system_r']}"
    rows: list[pd.DataFrame] = []
    for start in range(0, s.n_campaigns, s.chunk):
        c = min(s.chunk, s.n_campaigns - start)
        world = draw((c, s.n_responses), rng)
        draws = Draws(*(rng.random((c, s.n_responses)) for _ in range(3)))
        for budget in s.budgets:
            base = {**tags, "budget": budget, "campaign0": start}
            for double, designs in ((False, OBSERVED_DESIGNS), (True, DOUBLE_DESIGNS)):
                for design in designs:
                    if design == "classical":
                        est, cost = _classical(world, budget * (0.5 if double else 1.0), double, draws)
                    else:
                        est, cost = _two_iterations(s, world, budget, double, design, draws, oracle, rng)
                    tags_d = {**base, "design": design, "family": "double" if double else "observed"}
                    rows.append(_rows(est, cost, truth_values, tags_d))
        if progress is not None:
            progress(f"{label}: {start + c}/{s.n_campaigns} campaigns")
    return pd.concat(rows, ignore_index=True)


def run_setting(
    s: CampaignStudySettings, rater: str, system_r: float, progress: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """Every design at every budget for ``n_campaigns`` campaigns of one (rater category, system quality)."""
    seed = [s.seed, list(RATER_ERROR_SD).index(rater), int(round(system_r * 1000))]
    sd = RATER_ERROR_SD[rater]

    def draw(shape: tuple[int, int], rng: Any) -> World:
        return draw_world(s, sd, system_r, shape, rng)

    return run_draws(s, draw, {"rater": rater, "system_r": system_r}, seed, progress)


def run_study(s: CampaignStudySettings, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every setting of the study: one row per (setting, budget, design, metric, campaign)."""
    frames = [run_setting(s, rater, r, progress) for rater in s.rater_categories for r in s.system_r]
    return pd.concat(frames, ignore_index=True)


def quick_settings() -> CampaignStudySettings:
    """A small version of the study for tests and a first look (same world, fewer campaigns and responses)."""
    return replace(
        CampaignStudySettings(),
        n_responses=1500,
        n_campaigns=20,
        chunk=20,
        budgets=(0.1, 0.3),
        rater_categories=("high",),
        system_r=(0.9,),
        truth_responses=100_000,
        oracle_responses=30_000,
    )


def documented_settings() -> CampaignStudySettings:
    """The settings of the run on the study page: 2,000 responses, 1,000 campaigns, budgets 10-30%, 4 x 3 settings."""
    return replace(
        CampaignStudySettings(), n_responses=2000, chunk=250, budgets=(0.1, 0.2, 0.3), system_r=(0.3, 0.8, 0.95)
    )


def run_and_save(s: CampaignStudySettings, out_dir: str, progress: Callable[[str], None] | None = None) -> None:
    """Run every setting and write one gzipped CSV of per-campaign rows per setting into ``out_dir``."""
    import os

    os.makedirs(out_dir, exist_ok=True)
    for rater in s.rater_categories:
        for r in s.system_r:
            path = os.path.join(out_dir, f"campaign_{rater}_{r}.csv.gz")
            if os.path.exists(path):
                continue
            run_setting(s, rater, r, progress).to_csv(path + ".part", index=False, compression="gzip")
            os.replace(path + ".part", path)
