"""The evaluation campaign behind the interface a project store uses (:class:`core.models.base.Model`, registered
in :func:`core.models.get_model` as ``"campaign"``): items are responses carrying scoring systems' scores, and the
aim is each system's evaluation (mean human score, Pearson r, QWK, RMSE, SMD, PRMSE, human-human agreement, each
with a 95% interval), not the ranking of the responses.

* Annotators enter through the annotator-aware model (:class:`core.models.aware.model.AwareModel`, which this
  model extends): every change of the log is its refit, and the state adds each response's first and second human
  score on the unit scale (``first``, ``second``): the ratings put on a typical annotator's scale with the fit's
  offsets and slopes, those of an annotator flagged ``random`` not counted
  (:func:`core.campaign.project.human_scores`).
* The systems' scores come from the project (``ProjectInputs.covariates``, written by ``easl init --systems``), as
  do the designs of earlier iterations (``ProjectInputs.design``).
* :meth:`CampaignModel.choose` draws the next iteration's responses with the probabilities of
  :func:`core.campaign.design.choose_iteration` (Neyman allocation with a uniform floor and the never-worse rule,
  fitted on the earlier iterations' scores only) and returns the design for the store to record with the HITs;
  iteration 0 is a uniform pilot (:meth:`CampaignModel.first_iteration`).
* :meth:`CampaignModel.stop_figures` and :meth:`CampaignModel.stop_decision`: the estimates of
  :func:`core.campaign.project.campaign_estimates`; the campaign stops when every target metric's interval is
  narrower than ``hyper.stop_width``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.campaign import project as cp
from easl_toolkit.core.campaign.estimators import CampaignEstimates
from easl_toolkit.core.campaign.model import HumanScoreModel, fit_model
from easl_toolkit.core.models.aware.model import AwareModel
from easl_toolkit.core.models.inputs import Chosen

#: Expected human scores of an iteration, as a share of the responses, when ``--hits-per-iteration`` is not given.
ITERATION_SHARE = 0.05
#: State arrays of the human scores (unit scale, NaN: none).
FIRST, SECOND = "first", "second"
#: State array per annotator: 1 where their ratings count (not flagged ``random``), else 0.
COUNTED = "counted"


@dataclass(frozen=True)
class CampaignStop:
    """The stopping rule's verdict: ``stop`` when every target interval is narrower than ``width``."""

    stop: bool
    reason: str
    width: float | None
    widest: float | None


def _raters(state: dict[str, NDArray[Any]]) -> dict[str, int]:
    """Who counts as a human rater: the annotators left out (flagged ``random``) and their ratings, and the counted
    ratings whose annotators have too few ratings yet for the random-clicker test (they count, unchecked); nothing
    from a state cached before these arrays were kept (the next ingest adds them)."""
    from easl_toolkit.core.models.aware.clickers import RANDOM_MIN_SCORES

    if COUNTED not in state:
        return {}
    n_scores, counted = state["n_scores"], state[COUNTED] > 0
    checked = n_scores >= RANDOM_MIN_SCORES
    return {
        "annotators_left_out": int(np.sum(~counted & (n_scores > 0))),
        "ratings_left_out": int(np.sum(n_scores[~counted])),
        "annotators_unchecked": int(np.sum(counted & ~checked & (n_scores > 0))),
        "ratings_unchecked": int(np.sum(n_scores[counted & ~checked])),
    }


class CampaignModel(AwareModel):
    """Evaluation campaign (module docstring). ``name`` is ``"campaign"``."""

    name = "campaign"
    top_ups = False  # each iteration is drawn whole, with its design recorded

    def init_state(self, n_items: int) -> dict[str, NDArray[Any]]:
        """The aware prior state and no human scores."""
        state = super().init_state(n_items)
        state[FIRST], state[SECOND] = np.full(n_items, np.nan), np.full(n_items, np.nan)
        return state

    def refit(
        self, state: dict[str, NDArray[Any]] | None, item: Any, annotator: Any, score01: Any, *, n_items: int
    ) -> dict[str, NDArray[Any]]:
        """The aware refit (:meth:`AwareModel.refit`) and the responses' human scores from it."""
        out = super().refit(state, item, annotator, score01, n_items=n_items)
        item = np.asarray(item, dtype=np.int64)
        annotator = np.asarray(annotator, dtype=np.int64)
        n_ann = out["offset"].size
        counted: NDArray[Any] = np.ones(n_ann, dtype=bool)
        if item.size and n_ann:
            counted = np.asarray(super().diagnostics(out, item, annotator, score01).flag) != "random"
        out[FIRST], out[SECOND] = cp.human_scores(
            item, annotator, score01, out["offset"], out["slope"], counted, n_items
        )
        out[COUNTED] = counted.astype(np.float64)
        return out

    def hits_per_iteration(self, n_items: int) -> int:
        """``hits_per_iteration``, else HITs for :data:`ITERATION_SHARE` of the responses."""
        n = self.hyper.hit_size
        return self.hyper.hits_per_iteration or max(1, int(np.ceil(ITERATION_SHARE * n_items / n)))

    def first_iteration(self, n_items: int, rng: np.random.Generator) -> Chosen:
        """Iteration 0: a uniform pilot of one iteration's HITs, whole HITs of first scores and of second scores
        drawn as simple random samples (:func:`core.campaign.project.pilot_design`), recorded like any
        iteration."""
        n1, n2 = cp.pilot_hits(n_items, self.hits_per_iteration(n_items), self.hyper.hit_size)
        new1, new2 = cp.draw_pilot(n_items, n1, n2, rng)
        return Chosen(cp.arrange(new1, new2, self.hyper.hit_size, rng), cp.pilot_design(n_items, n1, n2))

    def _arrays(self, state: dict[str, NDArray[Any]]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """(systems (N, K), first, second) on the project's score range."""
        assert self.inputs is not None, "a campaign reads its systems' scores from its project (Model.attach)"
        h = self.hyper
        return self.inputs.covariates(), h.from_unit(state[FIRST]), h.from_unit(state[SECOND])

    def _fitted(self, state: dict[str, NDArray[Any]]) -> HumanScoreModel:
        """The human-score model fitted on the scores of ``state`` (:func:`core.campaign.model.fit_model`), kept
        for the same state arrays: ``easl next`` asks the stopping rule, then chooses, from one state."""
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] is state[FIRST] and memo[1] is state[SECOND]:
            kept: HumanScoreModel = memo[2]
            return kept
        systems, first, second = self._arrays(state)
        fitted = fit_model(systems[None], first[None], second[None])
        self._memo = (state[FIRST], state[SECOND], fitted)
        return fitted

    def choose(
        self,
        state: dict[str, NDArray[Any]],
        *,
        n_hits: int,
        rng: np.random.Generator,
        exclude: NDArray[Any] | None = None,
    ) -> Chosen:
        """The next iteration: probabilities from :func:`core.campaign.design.choose_iteration` on the human scores
        so far, budget ``n_hits * hit_size`` expected scores, drawn (:func:`core.campaign.project.draw`) and laid
        out as HITs; the design (with its unions) is returned for the store to record with them.

        Raises
        ------
        core.errors.UnsupportedByModel
            ``exclude`` marks items (streaming top-ups): a campaign draws whole iterations.
        """
        from easl_toolkit.core.campaign.design import choose_iteration

        if exclude is not None and np.asarray(exclude).any():
            from easl_toolkit.core.errors import UnsupportedByModel

            raise UnsupportedByModel(self.name, "streaming HITs (Label Studio top-ups)", "aware")
        systems, first, second = self._arrays(state)
        previous = self.inputs.design() if self.inputs is not None else {}
        p1, p2 = cp.weights(previous, first.size)
        plan = choose_iteration(
            systems[None],
            first[None],
            second[None],
            p1[None],
            p2[None],
            budget=max(float(n_hits * self.hyper.hit_size), 1.0),
            targets=cp.design_targets(self.hyper.campaign_targets),
            rng=rng,
            model=self._fitted(state),
        )
        budget = float(n_hits * self.hyper.hit_size)
        all1 = plan.all_first[0]
        all2 = np.maximum(plan.all_second[0], np.minimum(plan.p_second[0], 1.0))
        all2 = cp.second_floor(all1, all2, second, budget, self.hyper.campaign_targets)
        new1, new2 = cp.draw(*cp.slot_probabilities(all1, all2, first, second), first, second, rng)
        design = cp.union(previous, all1, all2)
        design["tau"] = np.full(1, float(plan.tau[0]))
        filler = np.flatnonzero(~np.isnan(first) & ~np.isnan(second))
        return Chosen(cp.arrange(new1, new2, self.hyper.hit_size, rng, filler), design)

    def next_hits(
        self,
        state: dict[str, NDArray[Any]],
        *,
        n_hits: int,
        rng: np.random.Generator,
        exclude: NDArray[Any] | None = None,
    ) -> NDArray[Any]:
        """The HITs of :meth:`choose`."""
        return self.choose(state, n_hits=n_hits, rng=rng, exclude=exclude).hits

    def estimates(self, state: dict[str, NDArray[Any]], metrics: Any = tuple(cp.REPORTED)) -> CampaignEstimates:
        """``metrics`` (default: every reported one, :data:`core.campaign.project.REPORTED`) of every system, from
        the human scores, the systems' scores and the recorded designs
        (:func:`core.campaign.project.campaign_estimates`)."""
        systems, first, second = self._arrays(state)
        design = self.inputs.design() if self.inputs is not None else {}
        p1, p2 = cp.weights(design, first.size)
        return cp.campaign_estimates(systems, first, second, p1, p2, metrics)

    def design_estimates(
        self, state: dict[str, NDArray[Any]], systems: NDArray[Any], names: Any
    ) -> dict[str, Any] | None:
        """Every reported metric of the given systems (scores on every response, the project's scale) with its 95%
        interval, from the campaign's human scores and recorded designs, the human-score model fitted on those
        systems (:func:`core.campaign.project.campaign_estimates`): ``systems`` (name -> metric -> figures),
        ``human`` (human-human agreement), ``mean_human_score``, ``n_responses``; with ``reason`` and no figures when a
        system has no score for some response."""
        _, first, second = self._arrays(state)
        systems = np.asarray(systems, dtype=np.float64)
        if not np.isfinite(systems).all():
            missing = int((~np.isfinite(systems)).any(axis=1).sum())
            reason = f"{missing} of the campaign's {first.size} responses have no score of a system"
            return {
                "systems": {},
                "human": {},
                "mean_human_score": None,
                "n_responses": int(first.size),
                "reason": reason,
            }
        design = self.inputs.design() if self.inputs is not None else {}
        p1, p2 = cp.weights(design, first.size)
        est = cp.campaign_estimates(systems, first, second, p1, p2)
        rep = cp.report(est, list(names), (), None)
        return {
            "systems": rep.systems,
            "human": {k: rep.overall[k] for k in ("hh_r", "hh_qwk") if k in rep.overall},
            "mean_human_score": rep.overall.get("mean"),
            "n_responses": int(first.size),
        }

    def _report(self, state: dict[str, NDArray[Any]], targets_only: bool = False) -> cp.CampaignReport:
        names = list(self.hyper.systems)
        targets = self.hyper.campaign_targets
        est = self.estimates(state, targets) if targets_only else self.estimates(state)
        return cp.report(est, names, targets, self.hyper.stop_width)

    def stop_decision(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> Any:
        """A :class:`CampaignStop`: stop when every target metric's 95% interval is narrower than
        ``hyper.stop_width``; None without one."""
        if self.hyper.stop_width is None:
            return None
        rep = self._report(state, targets_only=True)
        return CampaignStop(rep.reached, rep.reason, self.hyper.stop_width, rep.widest)

    def stop_figures(self, state: dict[str, NDArray[Any]], rng: np.random.Generator) -> dict[str, Any]:
        """What ``easl status`` reports of a campaign: per system each metric's estimate and 95% interval
        (``systems``), the human-human agreement (``human``), the human scores spent and counted, what scoring every
        response once and twice would cost, the targets, the stop width and the verdict."""
        rep = self._report(state)
        first, second = state[FIRST], state[SECOND]
        n = int(first.size)
        widest = rep.widest if rep.widest is not None and np.isfinite(rep.widest) else None
        return {
            "kind": "evaluation campaign",
            "targets": list(self.hyper.campaign_targets),
            "stop_width": self.hyper.stop_width,
            "reached": rep.reached,
            "reason": rep.reason,
            "widest_target_width": widest,
            "human_scores_spent": int(np.sum(state["count"])),
            "human_scores_counted": int(np.sum(~np.isnan(first)) + np.sum(~np.isnan(second))),
            "responses_scored": int(np.sum(~np.isnan(first))),
            "responses_double_scored": int(np.sum(~np.isnan(second))),
            "cost_score_all_once": n,
            "cost_score_all_twice": 2 * n,
            **_raters(state),
            "systems": rep.systems,
            "human": {k: rep.overall[k] for k in ("hh_r", "hh_qwk") if k in rep.overall},
            "mean_human_score": rep.overall.get("mean"),
        }
