"""A mkdocs hook: the command reference is the parser's own ``--help``, so the page can never disagree with the CLI.

A page line ``<!-- easl-help -->`` becomes one section per command and sub-command (``easl``, ``easl init``, ...,
``easl ls setup``), each the text ``--help`` prints, walked from :func:`tui.cli.build_parser`. The Sphinx roles
of the docstrings (``:func:``, ``:class:``, ...) are dropped from the rendered API pages. The page ``changelog.md``
is the repository's ``CHANGELOG.md``, added at build time so that the file has one home.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

MARKER = "<!-- easl-help -->"
#: Sphinx cross-reference roles in the docstrings (``:func:`x```), which Markdown shows as text before the code
ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj):(?=<code>)")
TILDE = re.compile(r"<code>~")
ROOT = Path(__file__).resolve().parents[2]


def _sections(parser: argparse.ArgumentParser, name: str) -> list[str]:
    os.environ["COLUMNS"] = "80"  # argparse wraps to the terminal's width: fix it for a stable page
    out = [f"## `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for action in parser._actions:  # argparse has no public walk of sub-parsers
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                out += _sections(sub, f"{name} {sub_name}")
    return out


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (mkdocs' hook signature)
    if MARKER not in markdown:
        return markdown
    from easl_toolkit.tui.cli import build_parser

    return markdown.replace(MARKER, "\n".join(_sections(build_parser(), "easl")))


def on_files(files, config):  # noqa: ANN001, ANN201
    from mkdocs.structure.files import File

    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "changelog.md", content=changelog))
    return files


def on_page_content(html: str, page, config, files) -> str:  # noqa: ANN001
    """Drop the Sphinx roles of the API pages' docstrings (the code they mark stays)."""
    return TILDE.sub("<code>", ROLE.sub("", html))
