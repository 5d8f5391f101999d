"""The sections of an evaluation as text, shared by the terminal tables of ``easl evaluate``
(``tui/commands/evaluate_tables.py``) and ``report.md`` (:mod:`core.metrics.report`), so the two show the same
figures, groups, intervals and explanations: observed scores, agreement among all raters, true scores, degradation,
subgroups and fairness.

Conventions of every section: a count is an integer without an interval; a p-value below 0.0001 is ``< 0.0001``;
an interval is the bootstrap percentile interval when the run drew resamples, else the closed-form one where the
figure has one (Fisher z for r, Gwet's t interval for the chance-corrected coefficients), and the caption says
which; the human-human comparison shows no system mean or sd (its second column is a human, not a system).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from easl_toolkit.core.metrics.glossary import (
    DEGRADATION,
    FAIRNESS_GROUP,
    OBSERVED_GROUPS,
    TRUE_SCORE_GROUP,
    meaning,
    p_text,
)
from easl_toolkit.core.metrics.registry import COUNT_KEYS, OBSERVED, TRUE_SCORE
from easl_toolkit.core.metrics.results import Block, Evaluation, Figure

#: Where the documentation explains every figure (the same sentences as :mod:`core.metrics.glossary`).
GLOSSARY_LINK = "docs/guides/evaluation.md#reading-the-figures"

#: The figures of the degradation section (RSMTool's degradation table: the agreement and association figures).
DEGRADATION_KEYS = ("corr", "spearman", "qwk", "conger_kappa", "exact_agr", "adj_agr", "smd", "mse", "r2", "gwet_ac1")

_LABELS = {m.name: m.label for m in (*OBSERVED, *TRUE_SCORE)} | {
    "gwet_ac2_linear": "Gwet's AC2 (linear weights)",
    "gwet_ac2_quadratic": "Gwet's AC2 (quadratic weights)",
    "disattenuated_corr": "disattenuated correlation",
    "N_pairable": "responses with 2+ ratings",
    "N_raters": "human columns",
}


class Section(NamedTuple):
    """One table: ``title``, a ``caption`` under it (what its figures tell), ``columns`` and ``rows`` (tuples of
    cell text); ``intro``, a paragraph above it (what a family of tables compares, on which responses, which
    intervals), and ``family``, the heading of that family in ``report.md``."""

    title: str
    caption: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]
    intro: str = ""
    family: str = ""


def number(v: Any) -> str:
    """A figure as printed: 4 decimals (4 significant digits from 10,000 on), ``n/a`` when not finite.

    Examples
    --------
    >>> number(0.123456), number(123456.0), number(float("nan")), number(None)
    ('0.1235', '1.235e+05', 'n/a', 'n/a')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    v = float(v)
    return f"{v:.4f}" if abs(v) < 1e4 else f"{v:.4g}"


def count(v: Any) -> str:
    """A count as an integer (``200``, never ``200.000``).

    Examples
    --------
    >>> count(200.0), count(float("nan"))
    ('200', 'n/a')
    """
    if v is None or not math.isfinite(float(v)):
        return "n/a"
    return str(int(v)) if float(v).is_integer() else number(v)


def interval(lo: Any, hi: Any) -> str:
    """``[low, high]``, or empty when a bound is undefined."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f"[{number(lo)}, {number(hi)}]"


def figure_interval(fig: Figure | None, bootstrapped: bool) -> str:
    """The interval of ``fig``: bootstrap when the run has one, else the closed-form one, else empty."""
    if fig is None:
        return ""
    iv = fig.ci if bootstrapped else fig.analytic
    return "" if iv is None else interval(iv.low, iv.high)


def value_text(key: str, v: float) -> str:
    return count(v) if key in COUNT_KEYS else number(v)


def label(key: str) -> str:
    """The short name of a figure (``corr``: Pearson's r)."""
    return _LABELS.get(key, key)


def interval_caption(ev: Evaluation) -> str:
    """Which intervals the tables show."""
    if ev.bootstrapped:
        return (
            f"Intervals: {ev.confidence:.0%} bootstrap percentile intervals over {ev.n_resamples} resamples of the "
            f"responses (seed {ev.seed})."
        )
    return (
        f"Intervals: {ev.confidence:.0%} closed-form intervals where a figure has one (Fisher z for corr; Gwet's "
        "linearised se with Student's t for the chance-corrected coefficients); --bootstrap N gives one for every "
        "figure."
    )


def observed(ev: Evaluation) -> list[Section]:
    """Every observed-score figure, one table per group: each system against the first human column, then
    human-human."""
    hh, systems, boot = ev.human_human, list(ev.systems), ev.bootstrapped
    columns = ["figure", "what it is"]
    for s in systems:
        columns += [s, f"{s} interval"]
    if hh.names:
        columns += ["human-human", "human-human interval"]
    ref = ev.human_columns[0]
    intro = f"Each system against the first human column, {ref}, on the {count(ev.n_responses)} responses with both."
    if hh.names:
        intro += (
            f" Human-human: {hh.names[0]} against {hh.names[1]} on the {count(hh.pair.value('N'))} responses both "
            f"scored ({hh.names[0]}'s mean and sd in h_mean and h_sd; a human has no sys_mean or sys_sd)."
        )
    out: list[Section] = []
    for group in OBSERVED_GROUPS:
        rows: list[tuple[str, ...]] = []
        for key in group.keys:
            row = [key, label(key)]
            for s in systems:
                block = ev.systems[s].observed
                row += [value_text(key, block.value(key)), _iv(block, key, boot)]
            if hh.names:
                mine = key not in ("sys_mean", "sys_sd") and key in hh.pair
                row += [value_text(key, hh.pair.value(key)) if mine else "", _iv(hh.pair, key, boot) if mine else ""]
            rows.append(tuple(row))
        caption = group.about[0].upper() + group.about[1:] + "."
        first = not out
        out.append(
            Section(
                f"Observed scores: {group.title}",
                caption,
                tuple(columns),
                rows,
                intro=f"{intro} {interval_caption(ev)}" if first else "",
                family="Observed scores" if first else "",
            )
        )
    return out


def _iv(block: Block, key: str, boot: bool) -> str:
    return "" if key in COUNT_KEYS or key not in block else figure_interval(block[key], boot)


def all_raters(ev: Evaluation) -> Section | None:
    """The chance-corrected coefficients among every human column, with se, interval and p-value."""
    block = ev.human_human.all_raters
    if block is None:
        return None
    boot = ev.bootstrapped
    columns = ("figure", "value", "se", "interval (t, capped at 1)", "p", *(("bootstrap interval",) if boot else ()))
    rows: list[tuple[str, ...]] = []
    for key, fig in block.figures.items():
        if key in COUNT_KEYS:
            continue
        an = fig.analytic
        cells = [key, number(fig.value)]
        cells += ["", "", ""] if an is None else [number(an.se), interval(an.low, an.high), p_text(an.p_value)]
        if boot:
            cells.append("" if fig.ci is None else interval(fig.ci.low, fig.ci.high))
        rows.append(tuple(cells))
    hh = ev.human_human
    raters = ", ".join(hh.raters)
    caption = (
        f"Every human column ({raters}) on every response with a rating: {count(block.value('N'))} responses, "
        f"{count(block.value('N_pairable'))} with two or more ratings (the agreement is measured on those; a single "
        f"rating enters the chance agreement). {_response_sets(block, hh)} p: two-sided, against no agreement "
        "beyond chance."
    )
    title = f"Agreement among all {len(hh.raters)} human raters"
    return Section(title, caption, columns, rows, family="Human-human agreement")


def _response_sets(block: Block, hh: Any) -> str:
    """Whether the all-raters coefficients and the human-human column of the observed tables rest on the same
    raters and responses (then they are equal), or on which different ones."""
    n_all, n_pair = block.value("N"), hh.pair.value("N") if hh.names else float("nan")
    if len(hh.raters) == 2 and n_all == n_pair:
        return "The same raters and responses as the human-human column of the observed scores: the same values."
    if len(hh.raters) == 2:
        return (
            f"The human-human column of the observed scores compares the same two raters on the {count(n_pair)} "
            f"responses both scored only, so its coefficients differ from these."
        )
    return (
        f"The human-human column of the observed scores compares {hh.names[0]} and {hh.names[1]} alone, on the "
        f"{count(n_pair)} responses both scored, so its coefficients differ from these."
    )


def true_scores(ev: Evaluation) -> Section:
    """PRMSE and its parts, and the disattenuated correlation, of every system."""
    boot = ev.bootstrapped
    columns = ["figure", "what it is"]
    for s in ev.systems:
        columns += [s, *((f"{s} interval",) if boot else ())]
    rows: list[tuple[str, ...]] = []
    for key in TRUE_SCORE_GROUP.keys:
        row = [key, label(key)]
        for e in ev.systems.values():
            fig = e.disattenuated_corr if key == "disattenuated_corr" else e.true_score[key]
            row.append(value_text(key, fig.value))
            if boot:
                row.append("" if key in COUNT_KEYS or fig.ci is None else interval(fig.ci.low, fig.ci.high))
        rows.append(tuple(row))
    caption = TRUE_SCORE_GROUP.about[0].upper() + TRUE_SCORE_GROUP.about[1:] + "."
    if boot:
        caption += " " + interval_caption(ev)
    return Section("True scores (PRMSE)", caption, tuple(columns), rows, family="True scores")


def degradation(ev: Evaluation) -> Section | None:
    """Each system's figure minus the human-human figure (RSMTool's degradation table)."""
    if ev.human_human.names is None:
        return None
    boot = ev.bootstrapped
    columns = ["figure", *[c for s in ev.systems for c in (s, *((f"{s} interval",) if boot else ()))]]
    rows: list[tuple[str, ...]] = []
    for key in DEGRADATION_KEYS:
        row = [key]
        for e in ev.systems.values():
            row.append(number(e.degradation.value(key)))
            if boot:
                row.append(_iv(e.degradation, key, True))
        rows.append(tuple(row))
    caption = DEGRADATION[0].upper() + DEGRADATION[1:] + "."
    return Section("Degradation (system minus human-human)", caption, tuple(columns), rows, family="Degradation")


def subgroups(ev: Evaluation) -> list[Section]:
    """N, r, QWK, SMD and DSM of every system in every subgroup (value and interval in one cell)."""
    out = []
    keys = ("corr", "qwk", "smd", "dsm")
    for gname, groups in ev.subgroups.items():
        rows: list[tuple[str, ...]] = []
        for glabel, per_sys in groups.items():
            for s, block in per_sys.items():
                cells = [glabel, s, count(block.value("N"))]
                for k in keys:
                    iv = _iv(block, k, True) if ev.bootstrapped else ""
                    cells.append(number(block.value(k)) + (f" {iv}" if iv else ""))
                rows.append(tuple(cells))
        caption = (
            f"The observed figures within each {gname} group; dsm: {meaning('dsm')}."
            f"{' Intervals: bootstrap percentile, beside each value.' if ev.bootstrapped else ''}"
        )
        out.append(Section(f"By {gname}", caption, ("group", "system", "N", *keys), rows, family=f"Subgroups: {gname}"))
    return out


_FAIRNESS_LABELS = {
    "osa": "accuracy: squared error ~ group",
    "osd": "difference: error ~ group",
    "csd": "difference given the human score",
}


def fairness(ev: Evaluation) -> list[Section]:
    """RSMTool's three fairness analyses of every system, by group column."""
    out = []
    for gname, per_sys in ev.fairness.items():
        boot = any(rec.bootstrapped for rec in per_sys.values())
        rows: list[tuple[str, ...]] = []
        base = ""
        for s, rec in per_sys.items():
            base = rec.base_group
            for k, fig in rec.figures().items():
                cells = [s, k, _FAIRNESS_LABELS[k], number(fig.value)]
                if boot:
                    cells.append("" if fig.ci is None else interval(fig.ci.low, fig.ci.high))
                rows.append((*cells, p_text(fig.p_value)))
        caption = (
            f"{FAIRNESS_GROUP.about[0].upper()}{FAIRNESS_GROUP.about[1:]}. Base group: {base} (the largest unless "
            "--base-group names one)."
        )
        columns = ("system", "figure", "what it is", "value (adjusted R2)", *(("interval",) if boot else ()), "p")
        out.append(Section(f"Fairness by {gname}", caption, columns, rows, family=f"Fairness by {gname}"))
    return out


def fairness_interval_notes(ev: Evaluation) -> list[str]:
    """Why a fairness interval is n/a, one note per system and reason."""
    notes = []
    for per_sys in ev.fairness.values():
        for s, rec in per_sys.items():
            by_reason: dict[str, list[str]] = {}
            for k, fig in rec.figures().items():
                if fig.ci_reason:
                    by_reason.setdefault(fig.ci_reason, []).append(k.upper())
            notes += [f"{s}: fairness {'/'.join(keys)} interval n/a: {why}" for why, keys in by_reason.items()]
    return notes


def without_empty_intervals(section: Section) -> Section:
    """``section`` without its interval columns that hold no interval (no bootstrap, no closed form)."""
    keep = [
        i for i, c in enumerate(section.columns) if not c.endswith("interval") or any(row[i] for row in section.rows)
    ]
    if len(keep) == len(section.columns):
        return section
    rows = [tuple(row[i] for i in keep) for row in section.rows]
    return section._replace(columns=tuple(section.columns[i] for i in keep), rows=rows)


def sections(ev: Evaluation) -> list[Section]:
    """Every section, in the order of the terminal and of ``report.md`` (interval columns without an interval
    left out); against a project's own estimates (one consensus score per item) no true-score section."""
    consensus = ev.raters is not None and ev.raters.against == "estimates"
    found: Iterable[Section | None] = (
        *observed(ev),
        all_raters(ev),
        None if consensus else true_scores(ev),
        degradation(ev),
        *subgroups(ev),
        *fairness(ev),
    )
    return [without_empty_intervals(s) for s in found if s is not None]


def notes(ev: Evaluation) -> list[str]:
    """The evaluation's notes, why a fairness interval is n/a, and why an observed figure is n/a."""
    reasons = sorted(
        {
            fig.reason
            for s in ev.systems
            for fig in ev.systems[s].observed.figures.values()
            if fig.reason and not fig.is_defined
        }
    )
    return [*ev.notes, *fairness_interval_notes(ev), *(f"n/a: {r}" for r in reasons)]


def glossary(ev: Evaluation) -> list[tuple[str, str]]:
    """``(figures, sentence)`` of every figure the sections of ``ev`` show, in their order, the figures that share a
    sentence (``bp, bp_linear, bp_quadratic``) together (``report.md``'s glossary)."""
    keys: dict[str, None] = {}
    for section in sections(ev):
        if section.columns[0] == "figure":
            keys.update((row[0], None) for row in section.rows)
        elif section.columns[:2] == ("system", "figure"):
            keys.update((row[1], None) for row in section.rows)
    if ev.subgroups:
        keys["dsm"] = None
    by_text: dict[str, list[str]] = {}
    for k in keys:
        if meaning(k):
            by_text.setdefault(meaning(k), []).append(k)
    return [(", ".join(names), text) for text, names in by_text.items()]
