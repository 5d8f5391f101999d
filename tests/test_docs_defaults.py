"""The help text and the guides state the defaults the code uses.

Every option's help that says ``(default: X)`` says the parser's default; every row of an option table in a guide
(``| `--option ARG` | default | meaning |``) and every ``--option`` (N) or (``--option``, N) in a guide's section on a
command (a heading naming ``easl COMMAND``) gives the default of that command's option. A default computed at run
time (the parser's default None) may be described in words, or by the number its help states. Constants the help
quotes are the code's (the stopping rule's minimum of scores per item), and the columns the guide and the help list for
``easl export --annotators`` are the file's, in its order.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

from easl_toolkit.tui.cli import build_parser, main

REPO = Path(__file__).resolve().parent.parent
GUIDES = sorted((REPO / "docs" / "guides").glob("*.md")) + [REPO / "docs" / "studies" / "aware.md"]
HEADING = re.compile(r"^#+ .*?`(easl [a-z][a-z -]*?)(?= [A-Z\[-]|`)", re.M)
TABLE = re.compile(r"^\| option \| default \| meaning \|\n\|[-|]+\|\n((?:\|.*\n)+)", re.M)
ROW = re.compile(r"^\| `(--[a-z][\w-]*)[^`]*` \| ([^|]+) \|", re.M)
PROSE = re.compile(r"`(--[a-z][\w-]*)(?: [A-Z]+)?` \((\d[\d.]*)\)|\(`(--[a-z][\w-]*)`, (\d[\d.]*)\)")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its name (``easl``, ``easl init``, ``easl simulate replay``, ...)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        out[name] = parser
        for action in parser._actions:  # argparse has no public walk of sub-parsers
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}")

    walk(build_parser(), "easl")
    return out


def option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    """The action of ``flag`` in ``parser``."""
    for action in parser._actions:
        if flag in action.option_strings:
            return action
    raise AssertionError(f"{parser.prog} has no option {flag}")


def agrees(default: object, stated: str) -> bool:
    """Whether the text ``stated`` gives ``default`` (module docstring)."""
    stated = stated.strip().strip("`").strip()
    if default is None or default is False:
        return NUMBER.fullmatch(stated.split(",")[0].strip()) is None  # words (none, off, computed), not a number
    if isinstance(default, (list, tuple)):
        return [str(v) for v in stated.replace(",", " ").split()] == [
            f"{v:g}" if isinstance(v, float) else str(v) for v in default
        ]
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return NUMBER.fullmatch(stated) is not None and float(stated) == float(default)
    return stated == str(default)


def stated_defaults() -> list[tuple[str, str, str, str]]:
    """``(where, command, option, stated default)`` of every option table row and prose default of the guides."""
    found = []
    for page in GUIDES:
        text = page.read_text(encoding="utf-8")
        headings = list(HEADING.finditer(text))
        for k, heading in enumerate(headings):
            end = headings[k + 1].start() if k + 1 < len(headings) else len(text)
            section, command = text[heading.end() : end], heading[1].strip()
            where = f"{page.relative_to(REPO).as_posix()} ({command})"
            rows = "".join(t[1] for t in TABLE.finditer(section))
            found += [(where, command, m[1], m[2]) for m in ROW.finditer(rows)]
            found += [(where, command, m[1] or m[3], m[2] or m[4]) for m in PROSE.finditer(section)]
    return found


def test_stated_defaults_are_read_from_tables_and_prose():
    assert agrees(5, "5") and agrees(0.93, "0.93") and agrees("aware", "`aware`") and agrees([0.0, 100.0], "0 100")
    assert agrees(None, "none") and agrees(None, "items // hit size") and not agrees(None, "12")
    assert not agrees(3, "2") and agrees(False, "off")
    found = {(c, o): d for _, c, o, d in stated_defaults()}
    assert found[("easl init", "--uniform-passes")] == "2" and found[("easl simulate replay", "--runs")] == "20"


def test_the_guides_state_the_parsers_defaults():
    commands = parsers()
    wrong = []
    for where, command, flag, stated in stated_defaults():
        parser = commands.get(command)
        assert parser is not None, f"{where}: no command {command!r}"
        action = option(parser, flag)
        helped = re.search(r"\(default: ([^),;]+)", action.help or "")
        if action.default is None and helped and agrees(helped[1], stated):
            continue  # resolved at run time, as the help states it
        if not action.required and not agrees(action.default, stated):
            wrong.append(f"{where}: {flag} {stated.strip()!r}, the code's default {action.default!r}")
    assert wrong == []


def test_every_help_that_states_a_default_states_the_parsers():
    wrong = []
    for name, parser in parsers().items():
        for action in parser._actions:
            m = re.search(r"\(default: ([^),;]+)", action.help or "")
            if m and action.default not in (None, False, argparse.SUPPRESS) and not agrees(action.default, m[1]):
                wrong.append(f"{name} {action.option_strings[-1]}: help {m[1]!r}, default {action.default!r}")
    assert wrong == []


def test_the_stop_at_help_quotes_the_stopping_rules_minimum_of_scores():
    from easl_toolkit.core.models.aware.posterior import STOP_MIN_SCORES

    help_text = " ".join(option(parsers()["easl init"], "--stop-at").help.split())
    assert f"at least {STOP_MIN_SCORES} scores per item" in help_text


def test_the_annotator_columns_in_the_help_and_the_guide_are_the_files(tmp_path, capsys):
    project, out = tmp_path / "w.easl", tmp_path / "annotators.csv"
    assert main(["init", str(project), "--items", str(REPO / "examples" / "formality.csv"), "--question", "q"]) == 0
    assert main(["ingest", str(project), str(REPO / "examples" / "formality-scores.csv")]) == 0
    assert main(["export", str(project), "--output", str(tmp_path / "e.csv"), "--annotators", str(out)]) == 0
    capsys.readouterr()
    columns = list(pd.read_csv(out).columns)
    listed = ", ".join(columns)
    help_text = " ".join(option(parsers()["easl export"], "--annotators").help.split())
    assert f"({listed})" in help_text
    guide = " ".join((REPO / "docs" / "guides" / "cli.md").read_text(encoding="utf-8").split())
    assert f"annotator table: `{listed}`" in guide
