"""The human raters of ``easl evaluate --project``: a campaign's ratings turned into one score per item and rater,
through the campaign's own model.

:func:`rater_table` is the one place where a project's ratings become the human-rater columns of an evaluation:

* **Annotators as calibrated raters.** When the project's model has annotator terms (the annotator-aware model,
  ``core/models/aware/``; its table is ``Project.annotator_table``, the one ``easl status --annotators`` prints),
  an annotator flagged in :data:`EXCLUDED_FLAGS` is left out of the human raters (named, with the model's reason),
  and every other rating is put on the consensus's scale by inverting the model's annotator terms. The model
  (``core/models/aware/fit.py``, unit scale, ``c = 0.5``) is ``x_k = c + o_a + s_a (mu_i - c) + e_k``; on the
  project's scale ``[lo, hi]`` with ``m = (lo + hi) / 2`` and the offset in score points ``O_a = (hi - lo) o_a``
  (the annotator table's ``offset``) a rating ``y`` of annotator ``a`` is ``m + (y - m - O_a) / s_a`` (the item's
  ``mu_i`` in score points) plus noise. The model fixes the level and spread of ``mu`` only through its priors
  (offsets about 0, slopes about 1 over the whole pool, random clickers included), so the corrected score is put
  back on the scale of the annotators kept: ``m + S (y - m - O_a) / s_a + O``, with ``O`` and ``S`` the mean
  offset and slope of the ratings kept (an affine map of ``mu``, the same fit), cut to ``[lo, hi]``. The raters'
  differences are removed; their common level and spread are the kept annotators'. An annotator whose slope is
  not positive cannot be inverted and is left out, named. With ``raw=True`` the ratings enter as given (the
  random clickers are still left out). The annotator terms are those of Raykar et al. (2010), "Learning from
  crowds", JMLR 11 (additive annotator effects) and Paun et al. (2018), "Comparing Bayesian models of annotation",
  TACL 6 (offset and scale), as fitted by ``core/models/aware/fit.py``. A project whose model has no annotator
  terms: the ratings as given, and the notes say no calibration was applied.
* **Ratings without an annotator** are one rater, :data:`NO_ANNOTATOR` (``"(none)"``, the name ``easl status
  --annotators``, ``easl ingest`` and the monitor give them).
* **Repeated ratings** of an item by the same rater: that rater's score of the item is the mean of them (the
  notes count them); nothing is dropped.

Design weights (not implemented): an evaluation campaign whose responses were chosen with recorded inclusion
probabilities would weight each response by the inverse of its probability (Horvitz & Thompson 1952). The
probabilities would be read with the rest in ``read_project`` (a field of :class:`ProjectRatings`) and become one
column of :attr:`RaterTable.scores` in :func:`rater_table`; the metrics would then need per-response weights.

Pure data in, data out (pandas); the caller reads the project (``tui/evaluation.py``, :func:`read_project
<easl_toolkit.tui.evaluation.read_project>`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

#: The name of the rater of the ratings ingested without an annotator (as ``easl status --annotators`` shows them).
NO_ANNOTATOR = "(none)"
#: Annotator flags (``core.models.aware.diagnostics.FLAGS``) whose annotators are left out of the human raters:
#: ``random``, an agreement with the consensus no better than chance. ``collapsed`` and ``noisy`` annotators
#: carry information: the calibration undoes their slope and the true-score metrics count their noise.
EXCLUDED_FLAGS = ("random",)


@dataclass(frozen=True)
class ProjectRatings:
    """What an evaluation reads from a project.

    Attributes
    ----------
    ratings : DataFrame
        The live ratings (``Project.ratings``): ``item_id``, ``annotator`` (missing: none given), ``score`` on the
        project's scale.
    items : DataFrame
        The items (``Project.items``): ``item_id`` and extra columns.
    scale : tuple of float
        The project's score range ``(min, max)``.
    annotators : DataFrame, optional
        The annotator table (``Project.annotator_table``: ``annotator``, ``offset`` in score points, ``slope``,
        ``flag``, ``reason``, ...); None for a model without annotator terms.
    estimates : DataFrame, optional
        The per-item estimates (``Project.estimates``: ``item_id``, ``estimate``, ``n_annotations``, ...), read
        for ``--against estimates``.
    """

    ratings: pd.DataFrame
    items: pd.DataFrame
    scale: tuple[float, float]
    annotators: pd.DataFrame | None = None
    estimates: pd.DataFrame | None = None


@dataclass(frozen=True)
class Excluded:
    """An annotator left out of the human raters, with the flag and the reason."""

    name: str
    flag: str
    reason: str


@dataclass(frozen=True)
class RaterSummary:
    """How the human raters of a project's evaluation were built (the ``raters`` object of ``easl evaluate --json``,
    the "Human raters" lines of the terminal and ``report.md``).

    Attributes
    ----------
    against : str
        ``"ratings"`` (the annotators as raters) or ``"estimates"`` (the project's own per-item estimates).
    calibration : str
        ``"annotator-aware"`` (annotator-corrected scores), ``"raw"`` (``--raw-ratings``) or ``"none"`` (a model
        without annotator terms, or the estimates).
    excluded : tuple of Excluded
        The annotators left out, with their flag and reason.
    repeated_ratings : int
        Ratings of an item by a rater who had already rated it (averaged into that rater's score of the item).
    design : dict, optional
        An evaluation campaign's design-weighted estimates (``Project.design_estimates``: every response, each
        metric with its 95% interval), which the unweighted figures of the scored responses do not replace; None for
        a project whose responses were not drawn with recorded probabilities.
    """

    against: str
    calibration: str
    excluded: tuple[Excluded, ...] = ()
    repeated_ratings: int = 0
    design: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``raters`` object of the JSON output (``docs/reference/outputs.md``)."""
        return {
            "against": self.against,
            "calibration": self.calibration,
            "excluded": [{"annotator": e.name, "flag": e.flag, "reason": e.reason} for e in self.excluded],
            "repeated_ratings": {"n": int(self.repeated_ratings), "rule": "mean"},
            "design_estimates": self.design,
        }

    def lines(self) -> list[str]:
        """The summary in sentences, for the terminal and ``report.md``."""
        what = {
            "annotator-aware": "annotator-corrected scores (each annotator's offset and slope from the annotator-"
            "aware model; --raw-ratings: the ratings as given)",
            "raw": "the ratings as given (--raw-ratings)",
            "none": "the ratings as given; no calibration applied (the project's model has no annotator terms)",
        }
        if self.against == "estimates":
            out = ["human score: the project's own estimate of each rated item (no human-human or PRMSE figures)"]
        else:
            out = [f"human raters: {what[self.calibration]}"]
        out += [f"left out: {e.name}, flagged {e.flag} ({e.reason})" for e in self.excluded]
        if self.repeated_ratings:
            out.append(f"repeated ratings: {self.repeated_ratings}, each rater's score of an item the mean of theirs")
        return out + design_lines(self.design)


def design_lines(design: dict[str, Any] | None) -> list[str]:
    """An evaluation campaign's design-weighted estimates in sentences (:attr:`RaterSummary.design`)."""
    if design is None:
        return []
    if design.get("reason"):
        return [f"an evaluation campaign, but no design-weighted estimates: {design['reason']}"]

    def fig(name: str, f: dict[str, Any] | None) -> str:
        if f is None or f["estimate"] is None:
            return f"{name} n/a"
        if f["width"] is None:
            return f"{name} {f['estimate']:.3f} (no interval: {f.get('reason', '')})"
        return f"{name} {f['estimate']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}]"

    out = [
        "an evaluation campaign: its responses were drawn with recorded, unequal probabilities, so the figures below "
        "describe the responses scored; the design-weighted estimates for all "
        f"{design['n_responses']} responses, with 95% intervals (as easl status reports them):"
    ]
    human = [fig("mean human score", design.get("mean_human_score"))]
    human += [fig(k, f) for k, f in design.get("human", {}).items()]
    out.append("  humans: " + "; ".join(human))
    for system, metrics in design["systems"].items():
        out.append(f"  {system}: " + "; ".join(fig(k, f) for k, f in metrics.items()))
    return out


@dataclass(frozen=True)
class RaterTable:
    """The human raters of an evaluation: one row per (item, rater) with its score (``item_id``, ``annotator``,
    ``score``, ``n_ratings``), how they were built (:class:`RaterSummary`), and the notes that say it."""

    scores: pd.DataFrame
    summary: RaterSummary
    notes: list[str] = field(default_factory=list)


def rater_names(annotator: pd.Series) -> pd.Series:
    """Each rating's rater name: the annotator as text, :data:`NO_ANNOTATOR` when none was given."""
    return annotator.astype(object).where(annotator.notna(), NO_ANNOTATOR).astype(str)


def rater_table(source: ProjectRatings, *, raw: bool = False) -> RaterTable:
    """The human raters of ``source`` (module docstring): random clickers left out, annotator-corrected scores
    (``raw`` False and a model with annotator terms), ratings without an annotator as :data:`NO_ANNOTATOR`,
    repeated ratings averaged. The one place to extend with design weights (module docstring)."""
    ratings = source.ratings
    ratings = ratings[np.isfinite(ratings["score"].to_numpy(dtype=np.float64))]
    item = ratings["item_id"].astype(str).to_numpy()
    name = rater_names(ratings["annotator"]).to_numpy()
    score = ratings["score"].to_numpy(dtype=np.float64)
    notes: list[str] = []
    excluded: list[Excluded] = []
    if source.annotators is None:
        notes.append(
            "human raters: the ratings as given, no calibration applied (this project's model has no annotator "
            "terms; an annotator-aware project evaluates annotator-corrected scores)"
        )
    else:
        terms = annotator_terms(source.annotators)
        excluded = left_out(terms, calibrating=not raw)
        keep = ~np.isin(name, [e.name for e in excluded])
        item, name, score = item[keep], name[keep], score[keep]
        if excluded:
            notes.append(excluded_note(excluded, int((~keep).sum())))
        if raw:
            notes.append("human raters: the ratings as given (--raw-ratings), no annotator calibration applied")
        else:
            score, cut = calibrate(score, name, terms, source.scale)
            notes.append(calibration_note(source.scale, cut))
    scores, n_repeats, n_pairs = mean_of_repeats(item, name, score)
    if n_repeats:
        notes.append(
            f"{n_repeats} rating(s) repeat an item already rated by the same rater ({n_pairs} item-rater pair(s)): "
            f"each rater's score of an item is the mean of their ratings of it, nothing is left out"
        )
    calibration = "none" if source.annotators is None else "raw" if raw else "annotator-aware"
    return RaterTable(scores, RaterSummary("ratings", calibration, tuple(excluded), n_repeats), notes)


def annotator_terms(table: pd.DataFrame) -> pd.DataFrame:
    """The annotator table indexed by rater name (:func:`rater_names`): ``offset`` (score points), ``slope``,
    ``flag`` (``""`` when none), ``reason``."""
    out = pd.DataFrame(
        {
            "offset": table["offset"].to_numpy(dtype=np.float64),
            "slope": table["slope"].to_numpy(dtype=np.float64),
            "flag": table["flag"].fillna("").astype(str).to_numpy(),
            "reason": table["reason"].fillna("").astype(str).to_numpy(),
        },
        index=rater_names(table["annotator"]).to_numpy(),
    )
    return out[~out.index.duplicated()]  # an annotator named "(none)" and ratings without one: the first row


def left_out(terms: pd.DataFrame, *, calibrating: bool) -> list[Excluded]:
    """The annotators left out of the human raters: flagged in :data:`EXCLUDED_FLAGS`, and, when ``calibrating``,
    those whose slope is not a positive number (their scores cannot be put on the consensus's scale)."""
    out = []
    for name, t in terms.iterrows():
        if t.flag in EXCLUDED_FLAGS:
            out.append(Excluded(str(name), str(t.flag), str(t.reason)))
        elif calibrating and not (np.isfinite(t.slope) and t.slope > 0):
            out.append(Excluded(str(name), "slope", f"slope {t.slope:.3g}: not invertible onto the consensus's scale"))
    return out


def excluded_note(excluded: list[Excluded], n_ratings: int) -> str:
    """The note naming the annotators left out, each with its flag and the model's reason."""
    who = "; ".join(f"{e.name} (flagged {e.flag}: {e.reason})" for e in excluded)
    return (
        f"left out of the human raters, {len(excluded)} annotator(s) with {n_ratings} rating(s) "
        f"(annotator-aware model, as `easl status --annotators`): {who}"
    )


def calibrate(
    score: NDArray[Any], name: NDArray[Any], terms: pd.DataFrame, scale: tuple[float, float]
) -> tuple[NDArray[Any], int]:
    """Each rating on the scale of the annotators kept, cut to ``scale`` (module docstring): ``m + S (y - m - O_a)
    / s_a + O`` with ``O`` and ``S`` the rating-weighted means of the offsets and slopes of the raters of ``name``;
    a rater without terms in ``terms`` has offset 0 and slope 1. Returns the scores and how many were cut."""
    lo, hi = scale
    mid = (lo + hi) / 2.0
    offset = terms["offset"].reindex(name).fillna(0.0).to_numpy(dtype=np.float64)
    slope = terms["slope"].reindex(name).fillna(1.0).to_numpy(dtype=np.float64)
    level, spread = (float(offset.mean()), float(slope.mean())) if name.size else (0.0, 1.0)
    corrected = mid + spread * (score - mid - offset) / slope + level
    cut = (corrected < lo) | (corrected > hi)
    return np.clip(corrected, lo, hi), int(cut.sum())


def calibration_note(scale: tuple[float, float], cut: int) -> str:
    """The note saying the human scores are annotator-corrected, and how."""
    lo, hi = scale
    text = (
        "human raters: annotator-corrected scores (each rating of annotator a put on the scale of the annotators "
        f"kept with the offset O_a and slope s_a of the annotator-aware model: m + S (score - m - O_a) / s_a + O, "
        f"m = {(lo + hi) / 2:g}, O and S the mean offset and slope of the ratings kept"
    )
    if cut:
        text += f"; {cut} cut to the scale [{lo:g}, {hi:g}]"
    return text + "); --raw-ratings evaluates the ratings as given"


def mean_of_repeats(item: NDArray[Any], name: NDArray[Any], score: NDArray[Any]) -> tuple[pd.DataFrame, int, int]:
    """One row per (item, rater): ``item_id``, ``annotator``, ``score`` (the mean of the rater's ratings of the
    item), ``n_ratings``; rows in order of each pair's first rating. Returns the table, the ratings beyond the first
    of each pair and the pairs rated more than once."""
    frame = pd.DataFrame({"item_id": item, "annotator": name, "score": score})
    grouped = frame.groupby(["item_id", "annotator"], sort=False)["score"]
    out = grouped.agg(["mean", "size"]).reset_index()
    out.columns = ["item_id", "annotator", "score", "n_ratings"]
    n = out["n_ratings"].to_numpy()
    return out, int((n - 1).sum()), int((n > 1).sum())


#: The rater name of the project's own estimates (``easl export``'s ``estimate`` column).
ESTIMATE_RATER = "estimate"


def estimate_table(source: ProjectRatings) -> RaterTable:
    """The project's own per-item estimates as the one human rater (``--against estimates``): the model's posterior
    estimate on the project's scale (``easl export``'s ``estimate``) of every item with at least one rating (an
    unrated item's estimate is the model's prior, not a measurement). One consensus score per item: the figures
    that compare two or more human scores of an item (human-human agreement, the agreement among all raters, the
    true-score metrics) do not apply."""
    est = source.estimates
    if est is None:
        raise ValueError("the project has no estimates")
    rated = est["n_annotations"].to_numpy(dtype=np.float64) > 0
    values = est["estimate"].to_numpy(dtype=np.float64)
    ok = rated & np.isfinite(values)
    scores = pd.DataFrame(
        {
            "item_id": est["item_id"].astype(str).to_numpy()[ok],
            "annotator": ESTIMATE_RATER,
            "score": values[ok],
            "n_ratings": est["n_annotations"].to_numpy()[ok],
        }
    )
    note = (
        f"against the project's own estimates: the model's estimate of each of the {int(ok.sum())} rated items "
        f"(easl export's estimate column; {int((~rated).sum())} unrated item(s) left out) is the one human score; "
        "no human-human agreement, no agreement among all raters and no true-score (PRMSE) figures: they need two "
        "or more human scores of an item, and a consensus has one"
    )
    return RaterTable(scores, RaterSummary("estimates", "none"), [note])
