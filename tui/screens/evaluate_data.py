"""What the Evaluate screen (``tui/screens/evaluate.py``) computes and shows, apart from its widgets: the fields
typed by the user (scale, number of resamples), the evaluation of the chosen columns (exactly as ``easl evaluate``
does, through ``tui.evaluation``), the saved report, and the rows of the results table.
"""

from __future__ import annotations

import math
from pathlib import Path

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.evaluation import evaluate_loaded, nothing_left

#: Metrics shown first in the results table (then the rest of the observed keys).
HEADLINE = (
    "N",
    "corr",
    "qwk",
    "conger_kappa_quadratic",
    "exact_agr",
    "adj_agr",
    "smd",
    "rmse",
    "r2",
    "spearman",
    "kendall_tau_b",
    "gwet_ac2_quadratic",
    "krippendorff_alpha_interval",
)
TRUE_SCORE = ("prmse", "mse_true", "true_score_variance", "rater_error_variance", "N_single", "N_multiple")


def parse_scale(text: str) -> tuple[float, float] | None:
    """``"MIN MAX"`` (space or comma separated) as two floats, or None for an empty field.

    Raises
    ------
    EaslError
        When the text is not two numbers with MIN < MAX.
    """
    parts = text.replace(",", " ").split()
    if not parts:
        return None
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise EaslError(f"scale: {text!r} is not two numbers; type the lowest and highest score, e.g. 1 6.") from None
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        raise EaslError(f"scale: {text!r} needs a lowest score below the highest one.")
    return low, high


def parse_count(text: str, field: str) -> int:
    """A non-negative integer field (empty = 0)."""
    text = text.strip()
    if not text:
        return 0
    try:
        value = int(text)
    except ValueError:
        raise EaslError(f"{field}: {text!r} is not a whole number.") from None
    if value < 0:
        raise EaslError(f"{field}: must be 0 or more, got {value}.")
    return value


def run_evaluation(
    path: Path,
    human: list[str],
    system: list[str],
    group: str | None,
    scale: tuple[float, float] | None,
    n_bootstrap: int,
    seed: int = 0,
    progress=None,
):
    """Read ``path`` and evaluate the chosen columns exactly as ``easl evaluate FILE --human ... --system ...
    [--group G] [--scale MIN MAX] --bootstrap N --seed S`` does (``core.metrics.load.load_wide``, then
    ``core.metrics.pipeline.evaluate``); ``progress(done, total)`` is called as bootstrap resamples finish.

    Returns
    -------
    core.metrics.results.Evaluation

    Raises
    ------
    EaslError
        No human or system column chosen, a column chosen twice, unreadable data, nothing left to evaluate.
    """
    from easl_toolkit.core.metrics.data import Scale
    from easl_toolkit.core.metrics.load import load_wide
    from easl_toolkit.core.metrics.options import EvaluationOptions

    if not human:
        raise EaslError(f"{path}: choose at least one human column.")
    if not system:
        raise EaslError(f"{path}: choose at least one system column.")
    overlap = sorted(set(human) & set(system))
    if overlap:
        raise EaslError(f"{path}: column {overlap[0]!r} is chosen both as human and as system.")
    if group is not None and group in set(human) | set(system):
        raise EaslError(f"{path}: column {group!r} is chosen both as a score and as the group column.")
    data = load_wide(path, human=list(human), system=list(system), group_col=group)
    ev = evaluate_loaded(
        data,
        path,
        group_name=group or "group",
        progress=progress,
        options=EvaluationOptions(scale=Scale(*scale) if scale else None, n_bootstrap=n_bootstrap, seed=seed),
    )
    if ev.n_responses == 0:
        raise nothing_left(path, ev.dropped)
    return ev


def save_report(evaluation, folder: Path, source: Path, seed: int = 0) -> list[Path]:
    """Write the report of ``easl evaluate --output DIR`` (``core.metrics.report.write_output``)."""
    from easl_toolkit.core.metrics.report import write_output

    return write_output(evaluation, Path(folder), source=str(source), seed=seed)


def format_value(value, ci=None) -> str:
    """A metric value with its interval, ``-`` for undefined (NaN or None) values."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, int):
        out = f"{value:,d}"
    else:
        out = f"{value:.3f}"
    if ci is not None and ci[0] is not None and ci[1] is not None and math.isfinite(ci[0]) and math.isfinite(ci[1]):
        out += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return out


def _cell(fig, count: bool = False) -> str:
    """A :class:`~core.metrics.results.Figure` as a table cell (counts as integers)."""
    if fig is None:
        return "-"
    value = fig.value
    if count:  # a count has no interval
        return format_value(int(value) if math.isfinite(value) and float(value).is_integer() else value)
    return format_value(value, fig.ci)


def result_rows(evaluation) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of the results table from an :class:`~core.metrics.results.Evaluation`: one row per
    metric, one column per system (value and interval), then human-human."""
    from easl_toolkit.core.metrics.registry import COUNT_KEYS, OBSERVED_KEYS

    systems = list(evaluation.systems)
    columns = ["metric", *systems]
    hh = evaluation.human_human.pair
    has_hh = bool(list(hh))
    if has_hh:
        columns.append("human-human")
    observed_keys = [*HEADLINE, *(k for k in OBSERVED_KEYS if k not in HEADLINE)]
    rows: list[list[str]] = []
    for key in observed_keys:
        count = key in COUNT_KEYS
        row = [key, *(_cell(evaluation.systems[s].observed.figures.get(key), count) for s in systems)]
        if has_hh:  # the second human is no system: no sys_mean / sys_sd there
            row.append("" if key in ("sys_mean", "sys_sd") else _cell(hh.figures.get(key), count))
        rows.append(row)
    for key in TRUE_SCORE:
        row = [key, *(_cell(evaluation.systems[s].true_score.figures.get(key), key in COUNT_KEYS) for s in systems)]
        if has_hh:
            row.append("")
        rows.append(row)
    row = ["disattenuated_corr", *(_cell(evaluation.systems[s].disattenuated_corr) for s in systems)]
    if has_hh:
        row.append("")
    rows.append(row)
    return columns, rows
