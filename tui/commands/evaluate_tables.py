"""The terminal tables of ``easl evaluate`` (without ``--json``): the sections of :mod:`core.metrics.sections`
(the same as ``report.md``'s) as rich tables, each figure named with what it is and grouped as RSMTool groups them,
intervals beside the values, then the notes and where every figure is explained."""

from __future__ import annotations


def print_tables(ev, args) -> None:
    """The evaluation ``ev`` as rich tables on stdout: how a project's human raters were built, observed scores,
    agreement among all raters, true scores, degradation, subgroups, fairness, then the notes and the link to the
    glossary."""
    from rich.console import Console

    from easl_toolkit.core.metrics.sections import GLOSSARY_LINK, notes, sections

    con = Console()
    con.print(
        f"[bold]{args.project or args.file}[/]: {ev.n_responses} responses evaluated, {ev.n_dropped} dropped; scale "
        f"[{ev.scale.min:g}, {ev.scale.max:g}]; human columns {', '.join(ev.human_columns)}",
        highlight=False,
    )
    for k, v in ev.dropped.items():
        con.print(f"  dropped {v}: {k}", highlight=False)
    for line in ev.raters.lines() if ev.raters is not None else ():
        con.print(f"  {line}", highlight=False, markup=False)
    for section in sections(ev):
        if section.intro:
            con.print(section.intro, highlight=False)
        con.print(rich_table(section, con.width))
    for note in notes(ev):
        con.print(f"[yellow]note:[/] {note}", highlight=False)
    con.print(f"What each figure means: {GLOSSARY_LINK}" + (" and report.md" if args.output else ""), highlight=False)
    if args.output:
        con.print(f"wrote {args.output}/ (report.md, evaluation.json, CSV tables, figures)", highlight=False)


#: Columns of text (left-justified); every other column holds figures.
_TEXT_COLUMNS = ("figure", "what it is", "group", "system")


def rich_table(section, width: int | None = None):
    """One :class:`core.metrics.sections.Section` as a rich table with its caption under it, fitted to ``width``
    (:func:`fit`); the first column (the figure's name) is never cut or wrapped, no figure is cut."""
    from rich.table import Table

    columns, rows = fit(section.columns, section.rows, width)
    table = Table(title=f"[bold]{section.title}[/]", caption=section.caption, caption_justify="left")
    names = [r[0] for r in rows] + [columns[0]]
    for i, column in enumerate(columns):
        if i == 0:
            table.add_column(column, no_wrap=True, min_width=max(map(len, names)))
        elif column == "what it is":
            table.add_column(column, ratio=1, min_width=16, style="dim")
        elif column in _TEXT_COLUMNS:
            table.add_column(column, overflow="fold")
        else:
            table.add_column(column, justify="right", overflow="fold")
    for row in rows:
        table.add_row(*(cell.replace(" [", "\n[") if cell[:1] != "[" else cell for cell in row))
    return table


def _natural(columns, rows) -> int:
    """The width of a table whose every cell is on one line (rich's box: 3 characters per column and 1)."""
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    return sum(widths) + 3 * len(columns) + 1


def fit(columns, rows, width: int | None):
    """``columns`` and ``rows`` for a terminal ``width`` columns wide: as they are when they fit; else each value
    with its interval under it in one cell (``X`` and ``X interval`` merged); else also without the "what it is"
    column (the glossary named under the tables says the same)."""
    if width is None or _natural(columns, rows) <= width:
        return columns, rows
    keep = [i for i, c in enumerate(columns) if not (c.endswith(" interval") and c[: -len(" interval")] in columns)]
    pair = {i: columns.index(f"{columns[i]} interval") for i in keep if f"{columns[i]} interval" in columns}

    def merged(row):
        return tuple(row[i] + (f" {row[pair[i]]}" if i in pair and row[pair[i]] else "") for i in keep)

    columns, rows = tuple(columns[i] for i in keep), [merged(r) for r in rows]
    widths = [
        max([len(c), *(len(line) for r in rows for line in r[i].replace(" [", "\n[").split("\n"))])
        for i, c in enumerate(columns)
    ]
    if sum(widths) + 3 * len(columns) + 1 > width and "what it is" in columns:
        drop = columns.index("what it is")
        columns = columns[:drop] + columns[drop + 1 :]
        rows = [r[:drop] + r[drop + 1 :] for r in rows]
    return columns, rows
