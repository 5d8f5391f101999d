"""The terminal tables of ``easl evaluate`` (without ``--json``): one rich table per family of figures, with the
bootstrap intervals beside the values, then the notes and the reasons of undefined figures."""

from __future__ import annotations

import math


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1e4 else f"{v:.4g}"
    return str(v)


def _ci(fig) -> str:
    """``[low, high]`` of a figure's bootstrap interval, or empty."""
    if fig is None or fig.ci is None:
        return ""
    return f"[{_fmt(fig.ci.low)}, {_fmt(fig.ci.high)}]"


def _count(v: float) -> str:
    return "n/a" if not math.isfinite(v) else str(int(v)) if float(v).is_integer() else _fmt(v)


def print_tables(ev, args) -> None:
    """The evaluation ``ev`` as rich tables on stdout: observed scores, agreement among all raters, true scores,
    subgroups, fairness, then the notes."""
    from rich.console import Console

    con = Console()
    con.print(
        f"[bold]{args.project or args.file}[/]: {ev.n_responses} responses evaluated, {ev.n_dropped} dropped; scale "
        f"[{ev.scale.min:g}, {ev.scale.max:g}]; human columns {', '.join(ev.human_columns)}"
    )
    for k, v in ev.dropped.items():
        con.print(f"  dropped {v}: {k}")
    con.print(_observed(ev))
    if ev.human_human.all_raters is not None:
        con.print(_all_raters(ev))
    con.print(_true_scores(ev))
    for gname, groups in ev.subgroups.items():
        con.print(_subgroups(gname, groups))
    for gname, per_sys in ev.fairness.items():
        _fairness(con, gname, per_sys)
    reasons = sorted(
        {
            fig.reason
            for s in ev.systems
            for fig in ev.systems[s].observed.figures.values()
            if fig.reason and not fig.is_defined
        }
    )
    for note in [*ev.notes, *(f"n/a: {r}" for r in reasons)]:
        con.print(f"[yellow]note:[/] {note}")
    if args.output:
        con.print(f"wrote {args.output}/ (eval.csv, eval_short.csv, true_score_eval.csv, report.md, figures)")


def _observed(ev):
    """Every observed-score figure, one column per system (and its interval), then human-human."""
    from rich.table import Table

    from core.metrics.registry import COUNT_KEYS, OBSERVED

    t = Table(title="Observed scores (system vs first human; human-human on double-scored responses)")
    t.add_column("metric")
    systems = list(ev.systems)
    for s in systems:
        t.add_column(s, justify="right")
    if ev.bootstrapped:
        for s in systems:
            t.add_column(f"{s} CI", justify="right")
    t.add_column("human-human", justify="right")
    hh = ev.human_human.pair
    for metric in OBSERVED:
        key = metric.name
        show = _count if key in COUNT_KEYS else _fmt
        row = [key] + [show(ev.systems[s].observed.value(key)) for s in systems]
        if ev.bootstrapped:
            row += [_ci(ev.systems[s].observed.figures.get(key)) for s in systems]
        row.append(show(hh.value(key)) if key in hh else "n/a")
        t.add_row(*row)
    return t


def _all_raters(ev):
    """The chance-corrected coefficients among all human raters with their analytic se, interval and p-value."""
    from rich.table import Table

    from core.metrics.registry import COUNT_KEYS

    allr = ev.human_human.all_raters
    a = Table(
        title=f"Agreement among all {len(ev.human_columns)} human raters ({_count(allr.value('N'))} "
        f"responses, {_count(allr.value('N_pairable'))} with two or more ratings)"
    )
    for c in ("coefficient", "value", "se", "interval (t, capped at 1)", "p"):
        a.add_column(c, justify="left" if c == "coefficient" else "right")
    for key, fig in allr.figures.items():
        if key in COUNT_KEYS:
            continue
        an = fig.analytic
        a.add_row(
            key,
            _fmt(fig.value),
            "" if an is None else _fmt(an.se),
            "" if an is None else f"[{_fmt(an.low)}, {_fmt(an.high)}]",
            "" if an is None else _fmt(an.p_value),
        )
    return a


def _true_scores(ev):
    """PRMSE and its parts (and the disattenuated correlation) of every system."""
    from rich.table import Table

    from core.metrics.registry import COUNT_KEYS, TRUE_SCORE_KEYS

    ts = Table(title="True scores (PRMSE)")
    ts.add_column("figure")
    for s_name in ev.systems:
        ts.add_column(s_name, justify="right")
        if ev.bootstrapped:
            ts.add_column(f"{s_name} CI", justify="right")
    for k in (*[k for k in TRUE_SCORE_KEYS if k != "N_raters"], "disattenuated_corr"):
        row = [k]
        for e in ev.systems.values():
            fig = e.disattenuated_corr if k == "disattenuated_corr" else e.true_score[k]
            row.append(_count(fig.value) if k in COUNT_KEYS else _fmt(fig.value))
            if ev.bootstrapped:
                row.append("" if k in COUNT_KEYS else _ci(fig))
        ts.add_row(*row)
    return ts


def _subgroups(gname, groups):
    """N, r, QWK, SMD and DSM of every system in every subgroup."""
    from rich.table import Table

    g = Table(title=f"By {gname} (DSM uses the whole set's means and sds)")
    for c in ("group", "system", "N", "corr", "qwk", "smd", "dsm"):
        g.add_column(c, justify="left" if c in ("group", "system") else "right")
    for label, per_sys in groups.items():
        for s, block in per_sys.items():
            g.add_row(
                label, s, _count(block.value("N")), *[_fmt(block.value(k)) for k in ("corr", "qwk", "smd", "dsm")]
            )
    return g


def _fairness(con, gname, per_sys) -> None:
    """The fairness table of one group column, then why an interval is n/a."""
    from rich.table import Table

    f = Table(title=f"Fairness by {gname} (base group: largest)")
    fair_ci = any(rec.bootstrapped for rec in per_sys.values())
    for c in ("system", "metric", "value", *(("CI",) if fair_ci else ()), "p"):
        f.add_column(c, justify="left" if c in ("system", "metric") else "right")
    for s, rec in per_sys.items():
        for k, label in (("osa", "OSA adjR2"), ("osd", "OSD adjR2"), ("csd", "CSD delta adjR2")):
            fig = rec.figures()[k]
            cells = [s, label, _fmt(fig.value)]
            if fair_ci:
                cells.append("" if fig.ci is None else f"[{_fmt(fig.ci.low)}, {_fmt(fig.ci.high)}]")
            f.add_row(*cells, _fmt(fig.p_value))
    con.print(f)
    for s, rec in per_sys.items():
        by_reason: dict[str, list[str]] = {}
        for k, fig in rec.figures().items():
            if fig.ci_reason:
                by_reason.setdefault(fig.ci_reason, []).append(k.upper())
        for why, keys in by_reason.items():
            con.print(f"[yellow]note:[/] {s}: fairness {'/'.join(keys)} interval n/a: {why}")
