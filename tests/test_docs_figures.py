"""A figure quoted in more than one place has one source: a table in ``docs/_figures/``.

The documentation includes the table where it quotes it (``--8<-- "name.md"``, pymdownx.snippets, at ``make docs``);
the README, which is read on its own, holds a copy between ``<!-- figures: docs/_figures/NAME.md ... -->`` and
``<!-- /figures -->`` that must equal the table (``python tests/test_docs_figures.py --write`` copies it). No other
page restates a figure of these tables: an interval such as ``+32% [+27, +36]`` written anywhere else fails the test,
so a figure cannot be quoted with two values.

The replay's table (``replay-agh-tv.md``) is what ``easl simulate replay --targets 0.9,0.93`` prints today: a test
runs it and compares (:func:`replay_table`; ``--write`` also rewrites the table from a run, about a minute).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "docs" / "_figures"
PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if FIGURES not in p.parents)]
COPY = re.compile(
    r"^<!-- figures: docs/_figures/(?P<name>[\w.-]+)[^\n]*-->\n(?P<body>.*?)^<!-- /figures -->$", re.M | re.S
)
INCLUDE = re.compile(r'^\s*--8<-- "(?P<name>[\w.-]+)"\s*$', re.M)
#: A figure with its interval: ``+32% [+27, +36]``, ``−7% [−11, −3]``.
INTERVAL = re.compile(r"[+−-]?\d+(?:\.\d+)?% \[[+−-]?\d+(?:\.\d+)?, [+−-]?\d+(?:\.\d+)?\]")


#: The replay behind ``replay-agh-tv.md``, and how the table names its methods.
REPLAY = ["simulate", "replay", "--targets", "0.9,0.93"]
REPLAY_LABELS = {"da": "DA", "da-z": "DA z-scores (WMT)", "easl": "EASL (the paper's)", "aware": "**aware** (default)"}


def _signed(x: float) -> str:
    """A whole percentage with its sign, the minus as the tables write it (``−7``)."""
    return f"{int(round(x)):+d}".replace("-", "−")


def _saved(row: pd.Series, ref: str) -> str:
    """The % saved against ``ref`` with its interval: ``+32% [+27, +36]``."""
    low, high = _signed(row[f"saved_vs_{ref}_low"]), _signed(row[f"saved_vs_{ref}_high"])
    return f"{_signed(row[f'saved_vs_{ref}'])}% [{low}, {high}]"


def replay_table(budget: pd.DataFrame) -> str:
    """``replay-agh-tv.md`` from a replay's ``tables/budget.csv`` at the targets 0.9 and 0.93: per method the
    scores per item, the ratio to DA's and the % saved vs DA with its interval; then how much fewer ``aware``
    needed than DA z-scores."""
    targets = sorted(budget["target"].unique())
    head = " | ".join(f"Spearman {t:.2f}: scores per item | × DA's | saved vs DA" for t in targets)
    lines = [f"| method | {head} |", "|---" * (1 + 3 * len(targets)) + "|"]
    for method, label in REPLAY_LABELS.items():
        cells = []
        for t in targets:
            row = budget[(budget["target"] == t) & (budget["method"] == method)].iloc[0]
            if method == "da":
                cells += [f"{row['budget']:.2f}", "1", ""]
            else:
                cells += [f"{row['budget']:.2f}", f"{row['ratio_to_da']:.2f}", _saved(row, "da")]
        if method == "aware":
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    aware = budget[budget["method"] == "aware"].set_index("target")
    fewer = " and ".join(f"{_saved(aware.loc[t], 'da-z').replace('+', '')} at {t:.2f}" for t in targets)
    lines += ["", f"`aware` also needed fewer annotations than DA z-scores: {fewer}."]
    return "\n".join(lines).replace(" |  |", " | |") + "\n"


def run_replay_table() -> str:
    """:func:`replay_table` of a run of ``easl simulate replay --targets 0.9,0.93`` (the shipped study)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "replay"
        done = subprocess.run(
            [sys.executable, "-m", "easl_toolkit.tui.cli", *REPLAY, "--out", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return replay_table(pd.read_csv(out / "tables" / "budget.csv"))


def figures(text: str) -> set[str]:
    """The figures with intervals quoted in ``text``."""
    return set(INTERVAL.findall(text))


def without_sources(text: str) -> str:
    """``text`` without its copies of the tables (the README's): what is left restates a figure if it quotes one."""
    return COPY.sub("", text)


def test_a_figure_with_its_interval_is_recognised():
    found = figures("saved **+32% [+27, +36]**, −7% [−11, −3]; 18% [13, 22] fewer; 4%")
    assert found == {"+32% [+27, +36]", "−7% [−11, −3]", "18% [13, 22]"}


def test_every_included_table_exists_and_every_readme_copy_equals_its_table():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    copies = {m["name"]: m["body"] for m in COPY.finditer(readme)}
    assert copies, "the README quotes the replay's table"
    for name, body in copies.items():
        assert body == (FIGURES / name).read_text(encoding="utf-8"), f"README's copy of {name} differs"
    for page in PAGES:
        for name in INCLUDE.findall(page.read_text(encoding="utf-8")):
            assert (FIGURES / name).is_file(), f"{page.relative_to(REPO)} includes a missing table {name}"


def test_no_page_restates_a_figure_of_a_source_table():
    quoted = {fig: table.name for table in FIGURES.glob("*.md") for fig in figures(table.read_text(encoding="utf-8"))}
    restated = {
        page.relative_to(REPO).as_posix(): sorted(
            fig for fig in figures(without_sources(page.read_text())) if fig in quoted
        )
        for page in PAGES
    }
    assert {page: figs for page, figs in restated.items() if figs} == {}


def test_the_replay_table_is_built_from_a_budget_table():
    rows = [
        {"target": t, "method": m, "budget": b, "ratio_to_da": b / d, "saved_vs_da": 100 * (1 - b / d)}
        | {f"saved_vs_{ref}_{end}": v for ref in ("da", "da-z") for end, v in (("low", -7.4), ("high", 9.0))}
        | {"saved_vs_da-z": 5.0}
        for t, d in ((0.9, 4.0), (0.93, 6.0))
        for m, b in (("da", d), ("da-z", d), ("easl", d), ("aware", d / 2))
    ]
    table = replay_table(pd.DataFrame(rows))
    assert "| DA | 4.00 | 1 | | 6.00 | 1 | |" in table
    assert "| **aware** (default) | **2.00** | **0.50** | **+50% [−7, +9]** | **3.00**" in table
    assert table.endswith("5% [−7, 9] at 0.90 and 5% [−7, 9] at 0.93.\n") and np.isfinite(rows[0]["budget"])


def test_the_replay_table_is_what_the_replay_prints():
    assert run_replay_table() == (FIGURES / "replay-agh-tv.md").read_text(encoding="utf-8")


def write() -> None:
    """Rewrite the replay's table from a run, then copy every table into the README's copies of it."""
    (FIGURES / "replay-agh-tv.md").write_text(run_replay_table(), encoding="utf-8")
    page = REPO / "README.md"
    text = page.read_text(encoding="utf-8")
    for m in reversed(list(COPY.finditer(text))):
        start, end = m.span("body")
        text = text[:start] + (FIGURES / m["name"]).read_text(encoding="utf-8") + text[end:]
    page.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_docs_figures.py --write")
    write()
