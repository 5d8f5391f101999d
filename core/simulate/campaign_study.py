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

With :attr:`CampaignStudySettings.iterations` K > 1 the designs after the pilot run K iterations, as a campaign
runs (``easl next`` between batches), each spending an equal share of the rest of the budget with the model, the
spreads and the robust rule refitted on every earlier score (their union probabilities). With
:attr:`CampaignStudySettings.single_target` each observed target has its own ``active`` and ``oracle`` design that
allocates for it alone (``--target r``) and guards nothing else; only that target's rows are kept
(:func:`headline_settings`).

All designs of a campaign share its simulated responses and the uniforms of their Poisson draws (common random
numbers), so differences between designs are paired over seeds. Every array op is over a chunk of campaigns at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from easl_toolkit.core.campaign.model import HumanScoreModel, cross_fitted_predictions, fit_model

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
    iterations: int = 1
    single_target: bool = False
    observed_designs: tuple[str, ...] = OBSERVED_DESIGNS
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
    tables: dict[tuple[str, ...], tuple[NDArray[Any], NDArray[Any]]]

    def tiled(self, c: int) -> HumanScoreModel:
        """The model repeated for a batch of c campaigns."""
        m = self.model
        return HumanScoreModel(
            coef=np.repeat(m.coef, c, axis=0),
            edges=np.repeat(m.edges, c, axis=0),
            bin_var=np.repeat(m.bin_var, c, axis=0),
            error_var=np.repeat(m.error_var, c, axis=0),
        )


def fit_oracle(world: World, target_sets: Sequence[tuple[str, ...]]) -> Oracle:
    """Fit the oracle on a one-campaign fully scored world: the model, and the spreads of each set of targets."""
    one = np.ones_like(world.first)
    model = fit_model(world.systems, world.first, world.second)
    tables = {}
    for targets in target_sets:
        res = target_residuals(world.systems, world.first, world.second, one, one, model, targets)
        tables[targets] = spread_tables(res)
    return Oracle(model=model, tables=tables)


def target_sets(s: CampaignStudySettings) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The sets of targets the designs of each family allocate for: the family's targets together, or (single
    target) each observed target alone and PRMSE (its two forms)."""
    if s.single_target:
        return {"observed": tuple((t,) for t in OBSERVED_TARGETS), "double": (DOUBLE_TARGETS,)}
    return {"observed": (OBSERVED_TARGETS,), "double": (DOUBLE_TARGETS,)}


def _nan(shape: tuple[int, ...]) -> NDArray[Any]:
    return np.full(shape, np.nan)


@dataclass(frozen=True)
class Draws:
    """Uniforms of one chunk: the pilot / classical draw (C, N), and each designed iteration's first and second
    draws (K, C, N)."""

    pilot: NDArray[Any]
    first: NDArray[Any]
    second: NDArray[Any]


def draw_uniforms(rng: Any, shape: tuple[int, int], iterations: int) -> Draws:
    """The pilot's uniforms, then each iteration's first and second (with one iteration: pilot, first, second)."""
    pilot = rng.random(shape)
    pairs = [(rng.random(shape), rng.random(shape)) for _ in range(iterations)]
    return Draws(pilot, np.stack([a for a, _ in pairs]), np.stack([b for _, b in pairs]))


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


def _design_options(s: CampaignStudySettings, design: str, family: str) -> dict[str, Any]:
    """choose_iteration's options of a design (the oracle's model is added by the caller); a single-target design
    guards no other metric."""
    guard = () if s.single_target else GUARDS[family]
    if design == "uniform":
        return {"tau": 1.0}
    if design == "oracle":
        return {"tau": 0.0}
    return {"tau": None, "margin": s.margin, "guard": guard, "invert": design == "wrong"}


def _designed(
    s: CampaignStudySettings,
    world: World,
    budget: float,
    double: bool,
    targets: tuple[str, ...],
    options: dict[str, Any],
    draws: Draws,
    rng: Any,
) -> tuple[CampaignEstimates, NDArray[Any]]:
    """Pilot (uniform) then ``s.iterations`` designed iterations with choose_iteration's ``options``, each spending
    an equal share of the rest of the budget and refitted on the scores of the earlier ones; estimates with
    cross-fitted control variates (:func:`core.campaign.model.cross_fitted_predictions`), as a campaign's."""
    c, n = world.first.shape
    pilot_share = budget * (0.5 if double else 1.0) * s.pilot_share
    take = draws.pilot < pilot_share
    first = np.where(take, world.first, np.nan)
    second = np.where(take, world.second, np.nan) if double else _nan((c, n))
    previous: tuple[NDArray[Any], NDArray[Any]] = (
        np.full((c, n), pilot_share),
        np.full((c, n), pilot_share if double else 0.0),
    )
    k_all = s.iterations
    for k in range(k_all):
        spent = (~np.isnan(first)).sum(axis=1) + (~np.isnan(second)).sum(axis=1)
        rest = np.maximum((budget * n - spent) / (k_all - k), 1.0)
        q1 = previous[0] if k else np.ones((c, n))
        q2 = previous[1] if k else np.ones((c, n))
        plan = choose_iteration(world.systems, first, second, q1, q2, budget=rest, targets=targets, rng=rng, **options)
        (first, second), previous = apply_iteration(
            plan, (world.first, world.second), (first, second), (draws.first[k], draws.second[k]), previous
        )
    metrics = DOUBLE_METRICS if double else OBSERVED_METRICS
    f = cross_fitted_predictions(world.systems, first, second)
    est = estimate(world.systems, first, second, previous[0], previous[1], predictions=f, metrics=metrics)
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
    oracle = fit_oracle(draw((1, s.oracle_responses), rng), [t for sets in target_sets(s).values() for t in sets])
    if tags.get("system_r") is None:
        tags = {**tags, "system_r": round(truth_values["r"], 3)}
    label = f"{tags['rater']} r={tags['system_r']}"
    rows: list[pd.DataFrame] = []
    for start in range(0, s.n_campaigns, s.chunk):
        c = min(s.chunk, s.n_campaigns - start)
        world = draw((c, s.n_responses), rng)
        draws = draw_uniforms(rng, (c, s.n_responses), s.iterations)
        for budget in s.budgets:
            base = {**tags, "budget": budget, "campaign0": start}
            for family in ("observed", "double"):
                for design, est, cost, keep in _family_runs(s, world, budget, family, draws, oracle, rng):
                    frame = _rows(est, cost, truth_values, {**base, "design": design, "family": family})
                    rows.append(frame if keep is None else frame[frame["metric"].isin(keep)])
        if progress is not None:
            progress(f"{label}: {start + c}/{s.n_campaigns} campaigns")
    return pd.concat(rows, ignore_index=True)


def _family_runs(
    s: CampaignStudySettings, world: World, budget: float, family: str, draws: Draws, oracle: Oracle, rng: Any
) -> list[tuple[str, CampaignEstimates, NDArray[Any], tuple[str, ...] | None]]:
    """(design, estimates, cost, metrics to keep or None for all) of every design of a family at one budget. A
    single-target design runs once per target and keeps only its target's metrics."""
    double = family == "double"
    sets = target_sets(s)[family]
    out: list[tuple[str, CampaignEstimates, NDArray[Any], tuple[str, ...] | None]] = []
    for design in DOUBLE_DESIGNS if double else s.observed_designs:
        if design == "classical":
            out.append((design, *_classical(world, budget * (0.5 if double else 1.0), double, draws), None))
            continue
        for targets in sets[:1] if design == "uniform" else sets:
            options = _design_options(s, design, family)
            if design == "oracle":
                options.update(model=oracle.tiled(world.first.shape[0]), tables=oracle.tables[targets])
            est, cost = _designed(s, world, budget, double, targets, options, draws, rng)
            single = s.single_target and design != "uniform"
            out.append((design, est, cost, tuple(RESULT_NAMES.get(t, t) for t in targets) if single else None))
    return out


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


def headline_settings() -> CampaignStudySettings:
    """The headline run: campaigns as they run (a pilot, then four iterations), each design allocating for one
    target metric, on the systems that agree with high-agreement raters at a true human-system r >= 0.8."""
    return replace(
        documented_settings(),
        rater_categories=("high",),
        system_r=(0.9, 0.95, 0.99),
        iterations=4,
        single_target=True,
        observed_designs=("classical", "uniform", "active", "oracle"),
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
